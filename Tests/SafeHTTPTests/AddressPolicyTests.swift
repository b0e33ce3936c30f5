import Foundation
import SafeHTTP
import Testing

/// The SSRF guard (docs/spec.md §6): which addresses webhooks may reach.
@Suite("AddressPolicy")
struct AddressPolicyTests {
    static let refused: [(String, String)] = [
        ("127.0.0.1", "loopback"), ("127.8.9.10", "loopback"), ("10.1.2.3", "private"), ("172.16.0.1", "private"),
        ("172.31.255.255", "private"), ("192.168.1.1", "private"), ("169.254.169.254", "metadata"),
        ("169.254.1.1", "link-local"),
        ("100.64.0.1", "carrier-grade NAT"), ("0.0.0.0", "unspecified"), ("224.0.0.1", "multicast"),
        ("::1", "loopback"),
        ("fc00::1", "private"), ("fd00:ec2::254", "private"), ("fe80::1", "link-local"),
        ("::ffff:127.0.0.1", "loopback"),
        ("::ffff:10.0.0.1", "private"), ("::127.0.0.1", "loopback"), ("::10.0.0.1", "private"),
        ("64:ff9b::7f00:1", "NAT64 form of 127.0.0.1, a loopback"), ("64:ff9b::a9fe:a9fe", "metadata"),
        ("64:ff9b:1::1", "local-use NAT64"),
        ("2002:7f00:1::", "6to4 form of 127.0.0.1"), ("2002:a00:1::1", "6to4 form of 10.0.0.1, a private"),
        ("2001:0:4136:e378::1", "Teredo"),
        ("fec0::1", "site-local"),
    ]
    static let allowed = [
        "8.8.8.8", "1.1.1.1", "172.32.0.1", "2606:4700:4700::1111", "172.15.255.255", "192.169.0.1", "100.128.0.1",
        "64:ff9b::808:808", "2002:808:808::1", "2001:db9::1",
    ]

    /// Every literal the C resolver takes for 127.0.0.1 (libcurl and FFmpeg would connect to it)
    /// is seen as such at submit, not only when connecting.
    static let loopbackSpellings = [
        "0x7f000001", "2130706433", "127.1", "0177.0.0.1", "0x7f.1", "127.000.000.001", "0x7F.0.0.1", "017700000001",
        "127.0.1",
    ]

    @Test("every form of an IPv4 literal", arguments: loopbackSpellings)
    func resolverLiterals(_ text: String) throws {
        let address = try #require(IPAddress(resolverLiteral: text), "\(text) is an address to the resolver")
        #expect(address == IPAddress("127.0.0.1"), "\(text) is \(address)")
        let why = AddressPolicy().staticRefusal(for: "https://\(text):8443/hook?token=1")
        #expect(why?.contains("(127.0.0.1) is a loopback address") == true, "\(text): \(why ?? "allowed")")
    }

    @Test("hosts as the resolver sees them")
    func canonicalHosts() {
        let policy = AddressPolicy()
        let refused: [(String, String)] = [
            ("http://localhost./x", "this machine"), ("http://LOCALHOST../x", "this machine"),
            ("http://0/x", "unspecified"),
            ("http://[fe80::1%25lo]/x", "link-local"), ("http://[fe80::1%25eth0]:80/x", "link-local"),
            ("http://[::127.0.0.1]/x", "loopback"),
            ("http://[64:ff9b::7f00:1]/x", "NAT64"), ("http://[2002:7f00:1::]/x", "6to4"),
            ("http://[::ffff:7f00:1]/x", "loopback"),
        ]
        for (url, word) in refused {
            #expect(
                policy.staticRefusal(for: url)?.contains(word) == true,
                "\(url): \(policy.staticRefusal(for: url) ?? "allowed")"
            )
        }
        #expect(IPAddress(resolverLiteral: "example.com") == nil && IPAddress(resolverLiteral: "cafe.example") == nil)
        #expect(
            policy.staticRefusal(for: "http://cafe.example/x") == nil
                && policy.staticRefusal(for: "http://0x7f.example/x") == nil
        )
    }

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
        for url in [
            "http://localhost/x", "http://LOCALHOST:9000/x", "http://api.localhost/x", "http://127.0.0.1:8080/x",
            "http://[::1]/",
            "http://user:pass@10.0.0.1/", "https://169.254.169.254/latest/meta-data", "http://[::ffff:127.0.0.1]/",
        ] {
            #expect(policy.staticRefusal(for: url) != nil, "\(url) is refused")
        }
        for url in [
            "ftp://example.com", "file:///etc/passwd", "gopher://example.com/", "example.com/hook", "not a url",
        ] {
            let why = policy.staticRefusal(for: url)
            #expect(why != nil, "\(url) is refused")
            #expect(
                AddressPolicy(allowPrivate: true).staticRefusal(for: url) != nil,
                "allowPrivate does not allow \(url)"
            )
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

    /// Malformed URLs are refused before any host is compared, whatever the policy: a
    /// percent-encoded or NUL-bearing host (`127.0.0.1%2f`, `localhost%00.example.com`) is a
    /// name no resolver sees the way the guard would, and a space is no URL at all.
    @Test("malformed URLs: spaces, percent-encoded hosts, bad ports, control characters")
    func malformed() {
        for url in [
            "https://127.0.0.1%2f/x", "https://localhost%00.example.com/x", "https://bucket example/x",
            "https://bucket.example/a b", "https://bucket.example:0/x", "https://bucket.example:65536/x",
            "https://bucket.example:80a/x", "https://[::1/x", "https://[zz::1]/x", "https://exa\u{7F}mple.com/",
            "https://exämple.com/", "https://example.com/\u{0}", "https://@/x", "https:///x", "https://a|b.com/",
            "https://example.com/{x}", "https://example.com\\@evil.com/", "https://ex%41mple.com/",
        ] {
            #expect(AddressPolicy(allowPrivate: true).staticRefusal(for: url) != nil, "\(url) is refused")
            #expect(AddressPolicy().staticRefusal(for: url) != nil, "\(url) is refused")
        }
        let shape = try? URLShape.parse("https://u:p@bucket.example:8443/a/b%20c?x=1#f").get()
        #expect(shape?.userInfo == "u:p" && shape?.host == "bucket.example" && shape?.port == 8443)
        #expect(shape?.path == "/a/b%20c" && shape?.query == "x=1" && shape?.fragment == "f")
        #expect((try? URLShape.parse("http://[fe80::1%25eth0]:80/").get())?.host == "[fe80::1%25eth0]")
        #expect((try? URLShape.parse("https://example.com").get())?.path == "")
        #expect(URLShape.parseTemplate("https://b.example/x/{name}")?.hasDotSegments == false)
        #expect(URLShape.parseTemplate("https://b.example/x/{name}/%2E%2e/y")?.hasDotSegments == true)
        #expect(URLShape.parseTemplate("https://b.example/./{name}")?.hasDotSegments == true)
    }

    @Test("fromEnvironment reads JOBCTL_ALLOW_PRIVATE_WEBHOOKS")
    func fromEnvironment() {
        #expect(AddressPolicy.fromEnvironment([:]).allowPrivate == false)
        for value in ["1", "true", "TRUE", "yes"] {
            #expect(AddressPolicy.fromEnvironment(["JOBCTL_ALLOW_PRIVATE_WEBHOOKS": value]).allowPrivate, "\(value)")
        }
        for value in ["", "0", "false", "no"] {
            #expect(
                AddressPolicy.fromEnvironment(["JOBCTL_ALLOW_PRIVATE_WEBHOOKS": value]).allowPrivate == false,
                "\(value)"
            )
        }
        #expect(AddressPolicy() == AddressPolicy(allowPrivate: false), "the default guards")
    }
}
