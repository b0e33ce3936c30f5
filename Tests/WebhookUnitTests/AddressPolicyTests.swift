import Foundation
import Testing
import Webhooks

/// The SSRF guard (SPEC §6): which addresses webhooks may reach.
@Suite("AddressPolicy")
struct AddressPolicyTests {
    static let refused: [(String, String)] = [
        ("127.0.0.1", "loopback"), ("127.8.9.10", "loopback"), ("10.1.2.3", "private"), ("172.16.0.1", "private"),
        ("172.31.255.255", "private"), ("192.168.1.1", "private"), ("169.254.169.254", "metadata"), ("169.254.1.1", "link-local"),
        ("100.64.0.1", "carrier-grade NAT"), ("0.0.0.0", "unspecified"), ("224.0.0.1", "multicast"), ("::1", "loopback"),
        ("fc00::1", "private"), ("fd00:ec2::254", "private"), ("fe80::1", "link-local"), ("::ffff:127.0.0.1", "loopback"),
        ("::ffff:10.0.0.1", "private"),
    ]
    static let allowed = ["8.8.8.8", "1.1.1.1", "172.32.0.1", "2606:4700:4700::1111", "172.15.255.255", "192.169.0.1", "100.128.0.1"]

    @Test("refused by default", arguments: refused.map(\.0))
    func refusedByDefault(_ text: String) throws {
        let address = try #require(IPAddress(text), "\(text) parses")
        let why = AddressPolicy().refusal(for: address)
        let word = Self.refused.first { $0.0 == text }!.1
        #expect(why != nil, "\(text) must be refused")
        #expect(why?.contains(word) == true, "\(text): \(why ?? "nil") mentions \(word)")
        #expect(AddressPolicy(allowPrivate: true).refusal(for: address) == nil, "allowPrivate lifts \(text)")
    }

    @Test("allowed", arguments: allowed)
    func allowedAddresses(_ text: String) throws {
        let address = try #require(IPAddress(text), "\(text) parses")
        #expect(AddressPolicy().refusal(for: address) == nil, "\(text)")
        #expect(AddressPolicy(allowPrivate: true).refusal(for: address) == nil, "\(text)")
    }

    @Test("not addresses")
    func notAddresses() {
        for text in ["", "localhost", "example.com", "256.1.1.1", "1.2.3", "::g", "[::1]"] {
            #expect(IPAddress(text) == nil, "\(text)")
        }
    }

    @Test("staticRefusal: scheme, localhost, IP literals; credentials aside")
    func staticRefusal() {
        let policy = AddressPolicy()
        for url in ["http://localhost/x", "http://LOCALHOST:9000/x", "http://api.localhost/x", "http://127.0.0.1:8080/x", "http://[::1]/",
                    "http://user:pass@10.0.0.1/", "https://169.254.169.254/latest/meta-data", "http://[::ffff:127.0.0.1]/"] {
            #expect(policy.staticRefusal(for: url) != nil, "\(url) is refused")
        }
        for url in ["ftp://example.com", "file:///etc/passwd", "gopher://example.com/", "example.com/hook", "not a url"] {
            let why = policy.staticRefusal(for: url)
            #expect(why != nil, "\(url) is refused")
            #expect(AddressPolicy(allowPrivate: true).staticRefusal(for: url) != nil, "allowPrivate does not allow \(url)")
        }
        #expect(policy.staticRefusal(for: "ftp://example.com")?.contains("http") == true)
        #expect(policy.staticRefusal(for: "https://example.com/hook") == nil)
        #expect(policy.staticRefusal(for: "http://user:pass@example.com:8443/hook?x=1") == nil)
        #expect(policy.staticRefusal(for: "https://8.8.8.8/hook") == nil)
        #expect(policy.staticRefusal(for: "http://localhost/x")?.contains("localhost") == true)
        #expect(policy.staticRefusal(for: "http://127.0.0.1:8080/x")?.contains("loopback") == true)

        let open = AddressPolicy(allowPrivate: true)
        for url in ["http://localhost/x", "http://127.0.0.1:8080/x", "http://[::1]/", "http://user:pass@10.0.0.1/"] {
            #expect(open.staticRefusal(for: url) == nil, "allowPrivate allows \(url)")
        }
    }

    @Test("fromEnvironment reads JOBCTL_ALLOW_PRIVATE_WEBHOOKS")
    func fromEnvironment() {
        #expect(AddressPolicy.fromEnvironment([:]).allowPrivate == false)
        for value in ["1", "true", "TRUE", "yes"] {
            #expect(AddressPolicy.fromEnvironment(["JOBCTL_ALLOW_PRIVATE_WEBHOOKS": value]).allowPrivate, "\(value)")
        }
        for value in ["", "0", "false", "no"] {
            #expect(AddressPolicy.fromEnvironment(["JOBCTL_ALLOW_PRIVATE_WEBHOOKS": value]).allowPrivate == false, "\(value)")
        }
        #expect(AddressPolicy() == AddressPolicy(allowPrivate: false), "the default guards")
    }
}
