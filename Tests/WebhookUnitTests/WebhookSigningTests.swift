import Foundation
import Testing
import Webhooks

/// Standard Webhooks signing (docs/spec.md §6): the reference vector, verification, rotation, secrets.
@Suite("Webhook signing")
struct WebhookSigningTests {
    static let secretText = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
    static let id = "msg_p5jXN8AQM9LWM0D4loKWxJek"
    static let timestamp: Int64 = 1_614_265_330
    static let body = Data(#"{"test": 2432232314}"#.utf8)
    static let expected = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="

    static func secret(_ text: String = secretText) throws -> WebhookSecret {
        try #require(WebhookSecret(text), "\(text) is a valid secret")
    }

    @Test("the docs/spec.md §6 test vector, exactly")
    func referenceVector() throws {
        let signature = WebhookSignature.sign(
            id: Self.id,
            timestamp: Self.timestamp,
            body: Self.body,
            secrets: [try Self.secret()]
        )
        #expect(signature == Self.expected)
    }

    @Test("verify accepts the reference signature")
    func verifyAccepts() throws {
        let secret = try Self.secret()
        #expect(
            WebhookSignature.verify(
                id: Self.id,
                timestamp: Self.timestamp,
                body: Self.body,
                header: Self.expected,
                secrets: [secret]
            )
        )
        // Among other signatures, and other versions, in the header.
        let crowded = "v1,AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA= v2,whatever " + Self.expected
        #expect(
            WebhookSignature.verify(
                id: Self.id,
                timestamp: Self.timestamp,
                body: Self.body,
                header: crowded,
                secrets: [secret]
            )
        )
    }

    @Test("a tampered body, id, timestamp or signature fails; so does another secret")
    func verifyRejectsTampering() throws {
        let secret = try Self.secret()
        func verify(
            id: String = Self.id,
            timestamp: Int64 = Self.timestamp,
            body: Data = Self.body,
            header: String = Self.expected,
            secrets: [WebhookSecret]? = nil
        ) -> Bool {
            WebhookSignature.verify(
                id: id,
                timestamp: timestamp,
                body: body,
                header: header,
                secrets: secrets ?? [secret]
            )
        }
        #expect(!verify(body: Data(#"{"test": 2432232315}"#.utf8)), "body changed")
        #expect(!verify(body: Data(#"{"test":2432232314}"#.utf8)), "body re-serialized (a space less)")
        #expect(!verify(body: Self.body + Data("\n".utf8)), "a byte appended")
        #expect(!verify(id: "msg_p5jXN8AQM9LWM0D4loKWxJeK"), "id changed")
        #expect(!verify(timestamp: Self.timestamp + 1), "timestamp changed")
        #expect(!verify(header: "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OA="), "signature changed")
        #expect(!verify(header: "v2," + Self.expected.dropFirst(3)), "not a v1 signature")
        #expect(!verify(header: String(Self.expected.dropFirst(3))), "no version prefix")
        #expect(!verify(header: ""), "no signature")
        let other = try Self.secret(WebhookSecret.generate())
        #expect(!verify(secrets: [other]), "another secret")
        #expect(!verify(secrets: []), "no secret")
    }

    @Test("two secrets: two space-separated signatures; verify accepts with either")
    func rotation() throws {
        let old = try Self.secret()
        let new = try Self.secret(WebhookSecret.generate())
        let header = WebhookSignature.sign(
            id: Self.id,
            timestamp: Self.timestamp,
            body: Self.body,
            secrets: [new, old]
        )
        let parts = header.split(separator: " ", omittingEmptySubsequences: false).map(String.init)
        #expect(parts.count == 2, "\(header)")
        #expect(parts.allSatisfy { $0.hasPrefix("v1,") })
        #expect(parts.last == Self.expected, "the old secret's signature is the reference one")
        #expect(
            parts.first
                == WebhookSignature.sign(id: Self.id, timestamp: Self.timestamp, body: Self.body, secrets: [new])
        )
        for (name, secrets) in [("new", [new]), ("old", [old]), ("both", [old, new])] {
            #expect(
                WebhookSignature.verify(
                    id: Self.id,
                    timestamp: Self.timestamp,
                    body: Self.body,
                    header: header,
                    secrets: secrets
                ),
                "\(name)"
            )
        }
        let stranger = try Self.secret(WebhookSecret.generate())
        #expect(
            !WebhookSignature.verify(
                id: Self.id,
                timestamp: Self.timestamp,
                body: Self.body,
                header: header,
                secrets: [stranger]
            )
        )
    }

    @Test("a generated secret is whsec_ + base64 of 32 random bytes, and parses back")
    func generate() throws {
        let text = WebhookSecret.generate()
        #expect(text.hasPrefix("whsec_"))
        let bytes = try #require(Data(base64Encoded: String(text.dropFirst("whsec_".count))))
        #expect(bytes.count == 32)
        let secret = try Self.secret(text)
        #expect(WebhookSecret(text) == secret)
        let signature = WebhookSignature.sign(id: "msg_1", timestamp: 1, body: Data("{}".utf8), secrets: [secret])
        #expect(
            WebhookSignature.verify(
                id: "msg_1",
                timestamp: 1,
                body: Data("{}".utf8),
                header: signature,
                secrets: [secret]
            )
        )
        #expect(WebhookSecret.generate() != text, "random")
        #expect(!"\(secret)".contains(text.dropFirst(6)), "the secret is never printed: \(secret)")
    }

    @Test(
        "bad secrets are rejected",
        arguments: [
            "", "whsec_", "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "whsec-MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
            "whsec_not base64!!",
            "whsec_AAAAAAAAAAA=", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaS", "WHSEC_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
        ]
    )
    func badSecrets(_ text: String) {
        #expect(WebhookSecret(text) == nil, "\(text)")
    }

    @Test("surrounding whitespace (a file's newline) is ignored")
    func whitespace() throws {
        #expect(WebhookSecret(" \(Self.secretText)\n") == (try Self.secret()))
    }

    @Test("fromEnvironment: none, one, two for rotation, a file, bad values")
    func fromEnvironment() throws {
        let first = Self.secretText
        let second = WebhookSecret.generate()
        let third = WebhookSecret.generate()
        #expect(try WebhookSecret.fromEnvironment([:]) == [])
        #expect(try WebhookSecret.fromEnvironment(["JOBCTL_WEBHOOK_SECRET": ""]) == [])
        #expect(try WebhookSecret.fromEnvironment(["JOBCTL_WEBHOOK_SECRET": first]) == [try Self.secret(first)])
        #expect(
            try WebhookSecret.fromEnvironment(["JOBCTL_WEBHOOK_SECRET": "\(first) \(second)"]) == [
                try Self.secret(first), try Self.secret(second),
            ]
        )
        #expect(
            try WebhookSecret.fromEnvironment(["JOBCTL_WEBHOOK_SECRET": "\(first),\(second)"]) == [
                try Self.secret(first), try Self.secret(second),
            ]
        )
        #expect(try WebhookSecret.fromEnvironment(["JOBCTL_WEBHOOK_SECRET": "\(first), \(second)"]).count == 2)

        let directory = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent(
            "jobctl-secret-\(UUID().uuidString)"
        )
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("secret")
        try "\(second)\n".write(to: file, atomically: true, encoding: .utf8)
        #expect(
            try WebhookSecret.fromEnvironment(["JOBCTL_WEBHOOK_SECRET_FILE": file.path]) == [try Self.secret(second)]
        )
        let two = directory.appendingPathComponent("two")
        try "\(second)\n\(third)\n".write(to: two, atomically: true, encoding: .utf8)
        #expect(
            try WebhookSecret.fromEnvironment(["JOBCTL_WEBHOOK_SECRET_FILE": two.path]) == [
                try Self.secret(second), try Self.secret(third),
            ]
        )
        #expect(
            try WebhookSecret.fromEnvironment(["JOBCTL_WEBHOOK_SECRET": first, "JOBCTL_WEBHOOK_SECRET_FILE": file.path])
                == [try Self.secret(first)],
            "the variable wins over the file"
        )

        #expect(throws: WebhookSecretError.self, "a bad secret") {
            try WebhookSecret.fromEnvironment(["JOBCTL_WEBHOOK_SECRET": "hunter2"])
        }
        #expect(throws: WebhookSecretError.self, "one bad among good") {
            try WebhookSecret.fromEnvironment(["JOBCTL_WEBHOOK_SECRET": "\(first) nope"])
        }
        #expect(throws: WebhookSecretError.self, "a missing file") {
            try WebhookSecret.fromEnvironment([
                "JOBCTL_WEBHOOK_SECRET_FILE": directory.appendingPathComponent("missing").path
            ])
        }
        do {
            _ = try WebhookSecret.fromEnvironment(["JOBCTL_WEBHOOK_SECRET": "whsec_c2VjcmV0"])
            Issue.record("a 6-byte key was accepted")
        } catch let error as WebhookSecretError {
            #expect(!error.reason.contains("c2VjcmV0"), "the error does not echo the secret: \(error.reason)")
        }
    }
}
