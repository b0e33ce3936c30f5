import Foundation
import ObjectStorage
import Testing

/// The signer byte for byte against AWS's published vectors: the Signature Version 4 test suite
/// (service `service`, 2015-08-30T12:36:00Z) and the examples of the S3 API reference
/// (`examplebucket`, 2013-05-24T00:00:00Z).
@Suite("SigV4")
struct SigV4Tests {
    struct Vector: Sendable, CustomStringConvertible {
        var name: String
        var method = "GET"
        var path = "/"
        var query: [(name: String, value: String)] = []
        var headers: [(name: String, value: String)] = []
        var body = ""
        var signedHeaders = "host;x-amz-date"
        var signature: String
        var description: String { name }
    }

    static let suiteCredentials = AWSCredentials(
        accessKeyID: "AKIDEXAMPLE",
        secretAccessKey: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
    )
    static let suiteScope = SigV4.Scope(
        region: "us-east-1",
        service: "service",
        date: Date(timeIntervalSince1970: 1_440_938_160)
    )
    static let s3Credentials = AWSCredentials(
        accessKeyID: "AKIAIOSFODNN7EXAMPLE",
        secretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
    )
    static let s3Scope = SigV4.Scope(region: "us-east-1", date: Date(timeIntervalSince1970: 1_369_353_600))

    /// AWS's Signature Version 4 test suite.
    static let suite: [Vector] = [
        Vector(
            name: "get-header-key-duplicate",
            headers: [("my-header1", "value2,value2,value1")],
            signedHeaders: "host;my-header1;x-amz-date",
            signature: "c9d5ea9f3f72853aea855b47ea873832890dbdd183b4468f858259531a5138ea"
        ),
        Vector(
            name: "get-header-value-order",
            headers: [("my-header1", "value4,value1,value3,value2")],
            signedHeaders: "host;my-header1;x-amz-date",
            signature: "08c7e5a9acfcfeb3ab6b2185e75ce8b1deb5e634ec47601a50643f830c755c01"
        ),
        Vector(
            name: "get-header-value-trim",
            headers: [("my-header1", "value1"), ("my-header2", "\"a   b   c\"")],
            signedHeaders: "host;my-header1;my-header2;x-amz-date",
            signature: "acc3ed3afb60bb290fc8d2dd0098b9911fcaa05412b367055dee359757a9c736"
        ),
        Vector(
            name: "get-unreserved",
            path: "/-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz",
            signature: "07ef7494c76fa4850883e2b006601f940f8a34d404d0cfa977f52a65bbf5f24f"
        ),
        Vector(
            name: "get-utf8",
            path: "/ሴ",
            signature: "8318018e0b0f223aa2bbf98705b62bb787dc9c0e678f255a891fd03141be5d85"
        ),
        Vector(name: "get-vanilla", signature: "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"),
        Vector(
            name: "get-vanilla-empty-query-key",
            query: [("Param1", "value1")],
            signature: "a67d582fa61cc504c4bae71f336f98b97f1ea3c7a6bfe1b6e45aec72011b9aeb"
        ),
        Vector(
            name: "get-vanilla-query-order-key-case",
            query: [("Param2", "value2"), ("Param1", "value1")],
            signature: "b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500"
        ),
        Vector(
            name: "get-vanilla-query-unreserved",
            query: [
                (
                    "-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz",
                    "-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                )
            ],
            signature: "9c3e54bfcdf0b19771a7f523ee5669cdf59bc7cc0884027167c21bb143a40197"
        ),
        Vector(
            name: "get-vanilla-utf8-query",
            query: [("ሴ", "bar")],
            signature: "2cdec8eed098649ff3a119c94853b13c643bcf08f8b0a1d91e12c9027818dd04"
        ),
        Vector(
            name: "post-header-value-case",
            method: "POST",
            headers: [("My-Header1", "VALUE1")],
            signedHeaders: "host;my-header1;x-amz-date",
            signature: "cdbc9802e29d2942e5e10b5bccfdd67c5f22c7c4e8ae67b53629efa58b974b7d"
        ),
        Vector(
            name: "post-vanilla",
            method: "POST",
            signature: "5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b"
        ),
        Vector(
            name: "post-vanilla-query-nonunreserved",
            method: "POST",
            query: [("@#$%^", ""), ("+", "/,?><`\";:\\|][{}")],
            signature: "66c82657c86e26fb25238d0e69f011edc4c6df5ae71119d7cb98ed9b87393c1e"
        ),
        Vector(
            name: "post-vanilla-query-space",
            method: "POST",
            query: [("p", "")],
            signature: "e71688addb58a26418614085fb730ba3faa623b461c17f48f2fbdb9361b94a9b"
        ),
        Vector(
            name: "post-x-www-form-urlencoded",
            method: "POST",
            headers: [("Content-Type", "application/x-www-form-urlencoded")],
            body: "Param1=value1",
            signedHeaders: "content-type;host;x-amz-date",
            signature: "ff11897932ad3f4e8b18135d722051e5ac45fc38421b1da7b9d196a0fe09473a"
        ),
        Vector(
            name: "post-x-www-form-urlencoded-parameters",
            method: "POST",
            headers: [("Content-Type", "application/x-www-form-urlencoded; charset=utf8")],
            body: "Param1=value1",
            signedHeaders: "content-type;host;x-amz-date",
            signature: "1a72ec8f64bd914b0e42e42607c7fbce7fb2c7465f63e3092b3b0d39fa77a6fe"
        ),
    ]

    @Test("the Signature Version 4 test suite", arguments: suite)
    func testSuite(vector: Vector) {
        let request = SigV4.Request(
            method: vector.method,
            path: vector.path,
            query: vector.query,
            headers: [("Host", "example.amazonaws.com"), ("X-Amz-Date", "20150830T123600Z")] + vector.headers,
            payloadHash: SigV4.sha256Hex(Data(vector.body.utf8))
        )
        #expect(
            SigV4.authorization(request, credentials: Self.suiteCredentials, scope: Self.suiteScope)
                == "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=\(vector.signedHeaders), Signature=\(vector.signature)"
        )
    }

    /// The S3 API reference's examples.
    static let s3: [Vector] = [
        Vector(
            name: "GET Object (a range)",
            path: "/test.txt",
            headers: [("Range", "bytes=0-9")],
            signedHeaders: "host;range;x-amz-content-sha256;x-amz-date",
            signature: "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"
        ),
        Vector(
            name: "PUT Object",
            method: "PUT",
            path: "/test$file.text",
            headers: [("Date", "Fri, 24 May 2013 00:00:00 GMT"), ("x-amz-storage-class", "REDUCED_REDUNDANCY")],
            body: "Welcome to Amazon S3.",
            signedHeaders: "date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class",
            signature: "98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd"
        ),
        Vector(
            name: "GET Bucket lifecycle",
            query: [("lifecycle", "")],
            signedHeaders: "host;x-amz-content-sha256;x-amz-date",
            signature: "fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543"
        ),
        Vector(
            name: "GET Bucket (list objects)",
            query: [("max-keys", "2"), ("prefix", "J")],
            signedHeaders: "host;x-amz-content-sha256;x-amz-date",
            signature: "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7"
        ),
    ]

    @Test("the S3 API reference's signed requests", arguments: s3)
    func s3Examples(vector: Vector) {
        let payloadHash = SigV4.sha256Hex(Data(vector.body.utf8))
        let request = SigV4.Request(
            method: vector.method,
            path: vector.path,
            query: vector.query,
            headers: [
                ("Host", "examplebucket.s3.amazonaws.com"), ("x-amz-date", "20130524T000000Z"),
                ("x-amz-content-sha256", payloadHash),
            ] + vector.headers,
            payloadHash: payloadHash
        )
        #expect(
            SigV4.authorization(request, credentials: Self.s3Credentials, scope: Self.s3Scope)
                == "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, SignedHeaders=\(vector.signedHeaders), Signature=\(vector.signature)"
        )
    }

    @Test("the S3 API reference's pre-signed URL")
    func presignedURL() {
        let query = SigV4.presignedQuery(
            method: "GET",
            host: "examplebucket.s3.amazonaws.com",
            path: "/test.txt",
            credentials: Self.s3Credentials,
            scope: Self.s3Scope,
            expires: 86400
        )
        #expect(query.last?.name == "X-Amz-Signature")
        #expect(query.last?.value == "aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404")
        #expect(
            SigV4.canonicalQuery(query.dropLast())
                == "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&X-Amz-SignedHeaders=host"
        )
    }

    @Test("a secret or a session token never shows in the credentials' description")
    func credentialsDescription() {
        let credentials = AWSCredentials(accessKeyID: "AKID", secretAccessKey: "s3cr3t", sessionToken: "t0k3n")
        #expect(!"\(credentials)".contains("s3cr3t") && !"\(credentials)".contains("t0k3n"))
        #expect(!String(reflecting: credentials).contains("s3cr3t"))
    }
}
