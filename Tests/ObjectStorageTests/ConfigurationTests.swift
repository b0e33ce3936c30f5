import Foundation
import MediaTestKit
import Testing

@testable import ObjectStorage

/// Where the object store is, and whose credentials sign for it: the AWS conventions (the
/// environment, the shared files and their profiles, the container and instance metadata
/// endpoints), with a local stand-in for the metadata endpoints (scripts/fake-metadata.py).
@Suite("Object store configuration", .timeLimit(.minutes(2)))
struct ConfigurationTests {
    @Test("s3:// locations: what parses, and why the rest does not")
    func locations() throws {
        let location = try S3Location.parse("s3://media-bucket/talks/2026/talk one.mp4").get()
        #expect(location.bucket == "media-bucket" && location.key == "talks/2026/talk one.mp4")
        #expect("\(location)" == "s3://media-bucket/talks/2026/talk one.mp4")
        #expect(
            location.object(named: "x.jpg") == S3Location(bucket: "media-bucket", key: "talks/2026/talk one.mp4/x.jpg")
        )
        #expect(
            try S3Location.parse("s3://b-1/thumbs/{name}").get().object(named: "0001.jpg").key == "thumbs/0001.jpg"
        )
        let refused = [
            "s3://bucket": "no key",
            "s3://bucket/": "no key",
            "s3://AKID:secret@bucket/key": "credentials",
            "s3://Bucket/key": "lowercase",
            "s3://ab/key": "3 to 63",
            "s3://-bucket/key": "starts and ends",
            "s3://bucket/a/../b": ". or ..",
            // A mark that joins the `/` before or after it into one Character must not hide a segment.
            "s3://bucket/a/\u{0600}/../x": ". or ..",
            "s3://bucket/a/../\u{301}x": ". or ..",
            "s3://bucket/key?versionId=1": "no query",
            "s3://bucket//key": "cannot start with /",
            "s3://bucket/a\u{1}b": "control",
        ]
        for (text, reason) in refused {
            let problem = S3Location.problem(with: text)
            #expect(problem?.contains(reason) == true, "\(text): \(problem ?? "accepted")")
        }
        #expect(!S3Location.isS3("https://bucket/key") && S3Location.isS3("S3://bucket/key"))
    }

    @Test("the endpoint, the region and the addressing style, by AWS's precedence")
    func endpointAndRegion() throws {
        let files = SharedConfigFiles(
            settings: ["region": "eu-west-1", "endpoint_url": "http://profile:9000"],
            profile: "p"
        )
        var configuration = try S3Configuration.resolve(environment: [:], files: files)
        #expect(configuration.region == "eu-west-1" && "\(configuration.endpoint!)" == "http://profile:9000")
        configuration = try S3Configuration.resolve(
            environment: [
                "AWS_REGION": "us-west-2", "AWS_DEFAULT_REGION": "ap-south-1", "AWS_ENDPOINT_URL": "http://general:80/",
                "AWS_ENDPOINT_URL_S3": "https://s3.lan:8443/store/",
            ],
            files: files
        )
        #expect(configuration.region == "us-west-2")
        #expect(configuration.endpoint == .init(scheme: "https", host: "s3.lan:8443", basePath: "/store"))
        #expect(configuration.address(bucket: "b", key: "k/1.mp4") == ("https", "s3.lan:8443", "/store/b/k/1.mp4"))
        configuration = try S3Configuration.resolve(
            environment: ["AWS_DEFAULT_REGION": "ap-south-1", "AWS_ENDPOINT_URL": "http://general:80/"],
            files: SharedConfigFiles(settings: [:], profile: "default")
        )
        #expect(configuration.region == "ap-south-1" && configuration.endpoint?.host == "general")
        // AWS itself: virtual-hosted, path-style for a bucket with dots.
        let aws = S3Configuration(region: "eu-central-1")
        #expect(aws.address(bucket: "media", key: "a b") == ("https", "media.s3.eu-central-1.amazonaws.com", "/a b"))
        #expect(aws.address(bucket: "my.media", key: "a") == ("https", "s3.eu-central-1.amazonaws.com", "/my.media/a"))
        #expect(
            try S3Configuration.resolve(environment: [:], files: SharedConfigFiles(settings: [:], profile: "default"))
                .region == "us-east-1"
        )
        for bad in ["ftp://store", "http://user:pw@store", "store:9000", "http://store/?x=1"] {
            #expect(throws: S3Error.self, "\(bad)") {
                try S3Configuration.resolve(
                    environment: ["AWS_ENDPOINT_URL": bad],
                    files: SharedConfigFiles(settings: [:], profile: "default")
                )
            }
        }
    }

    @Test("the shared files: a profile's credentials and settings, [profile NAME] in the config file")
    func sharedFiles() async throws {
        try await withTemporaryDirectory("aws-files") { directory in
            let credentials = directory.file("credentials")
            let config = directory.file("config")
            try """
            [default]
            aws_access_key_id = AKIDDEFAULT
            aws_secret_access_key = default-secret

            [worker]
            aws_access_key_id=AKIDWORKER
            aws_secret_access_key = worker/secret+key
            # a comment
            aws_session_token = worker-token
            """.write(toFile: credentials, atomically: true, encoding: .utf8)
            try """
            [profile worker]
            region = eu-north-1
            s3 =
              addressing_style = path
            endpoint_url = http://127.0.0.1:8333
            """.write(toFile: config, atomically: true, encoding: .utf8)
            let environment = [
                "AWS_SHARED_CREDENTIALS_FILE": credentials, "AWS_CONFIG_FILE": config, "AWS_PROFILE": "worker",
                "AWS_EC2_METADATA_DISABLED": "true",
            ]
            let files = try SharedConfigFiles.load(environment: environment, home: directory.path)
            #expect(files.settings["region"] == "eu-north-1" && files.settings["addressing_style"] == nil)
            let chain = try CredentialChain(environment: environment, files: files)
            let found = try chain.credentials()
            #expect(found.accessKeyID == "AKIDWORKER" && found.secretAccessKey == "worker/secret+key")
            #expect(found.sessionToken == "worker-token")
            let configuration = try S3Configuration.resolve(environment: environment, files: files)
            #expect(configuration.region == "eu-north-1" && configuration.endpoint?.host == "127.0.0.1:8333")
            // The environment comes first.
            var withKeys = environment
            withKeys["AWS_ACCESS_KEY_ID"] = "AKIDENV"
            withKeys["AWS_SECRET_ACCESS_KEY"] = "env-secret"
            #expect(try CredentialChain(environment: withKeys, files: files).credentials().accessKeyID == "AKIDENV")
            withKeys["AWS_SECRET_ACCESS_KEY"] = nil
            #expect(throws: S3Error.self) { try CredentialChain(environment: withKeys, files: files) }
            // Nothing anywhere: an error that says where credentials come from.
            let none = try CredentialChain(
                environment: ["AWS_EC2_METADATA_DISABLED": "true"],
                files: SharedConfigFiles(settings: [:], profile: "default")
            )
            #expect {
                try none.credentials()
            } throws: { error in
                "\(error)".contains("AWS_ACCESS_KEY_ID") && "\(error)".contains("AWS_PROFILE")
            }
        }
    }

    @Test("the instance metadata service (IMDSv2, a session token first), refreshed before expiry")
    func instanceMetadata() async throws {
        try await withTemporaryDirectory("imds") { directory in
            let server = try await HelperServer(
                script: "fake-metadata.py",
                directory,
                name: "metadata",
                ["--role", "jobctl-worker", "--secret", "imds-secret", "--lifetime", "3600"]
            )
            defer { server.stop() }
            let environment = ["AWS_EC2_METADATA_SERVICE_ENDPOINT": server.url("")]
            let chain = try CredentialChain(
                environment: environment,
                files: SharedConfigFiles(settings: [:], profile: "default")
            )
            let first = try await onThread { try chain.credentials() }
            #expect(first.accessKeyID == "AKIDFAKE1" && first.secretAccessKey == "imds-secret")
            #expect(first.sessionToken == "session-token-1" && first.expiration != nil)
            // An hour left: the same credentials, no new request.
            #expect(try await onThread { try chain.credentials() }.accessKeyID == "AKIDFAKE1")
            let requests = server.records()
            #expect(
                requests.map { "\($0["method"]!) \($0["path"]!)" } == [
                    "PUT /latest/api/token", "GET /latest/meta-data/iam/security-credentials/",
                    "GET /latest/meta-data/iam/security-credentials/jobctl-worker",
                ]
            )
            let headers = try #require(requests.last?["headers"] as? [String: String])
            #expect(headers["x-aws-ec2-metadata-token"] == "imds-token-1")

            // Credentials with 2 minutes left are inside the 5-minute margin: fetched again.
            let shortLived = try await HelperServer(
                script: "fake-metadata.py",
                directory,
                name: "short",
                ["--lifetime", "120"]
            )
            defer { shortLived.stop() }
            let refreshing = try CredentialChain(
                environment: ["AWS_EC2_METADATA_SERVICE_ENDPOINT": shortLived.url("/")],
                files: SharedConfigFiles(settings: [:], profile: "default")
            )
            #expect(try await onThread { try refreshing.credentials() }.accessKeyID == "AKIDFAKE1")
            #expect(try await onThread { try refreshing.credentials() }.accessKeyID == "AKIDFAKE2")
        }
    }

    @Test("credentials an endpoint serves already expired are not used; an unreadable expiry is not taken as never")
    func staleCredentials() async throws {
        try await withTemporaryDirectory("stale") { directory in
            let files = SharedConfigFiles(settings: [:], profile: "default")
            // Two minutes left (inside the margin: fetched again), then ones that expired a
            // minute ago: the valid ones are kept.
            let stale = try await HelperServer(
                script: "fake-metadata.py",
                directory,
                name: "stale",
                ["--lifetimes", "120,-60"]
            )
            defer { stale.stop() }
            let chain = try CredentialChain(
                environment: ["AWS_EC2_METADATA_SERVICE_ENDPOINT": stale.url("")],
                files: files
            )
            #expect(try await onThread { try chain.credentials() }.accessKeyID == "AKIDFAKE1")
            #expect(
                try await onThread { try chain.credentials() }.accessKeyID == "AKIDFAKE1",
                "not the expired AKIDFAKE2"
            )
            // Only expired ones: no credentials, and the error says why.
            let expired = try await HelperServer(
                script: "fake-metadata.py",
                directory,
                name: "expired",
                ["--lifetimes", "-60"]
            )
            defer { expired.stop() }
            let none = try CredentialChain(
                environment: ["AWS_EC2_METADATA_SERVICE_ENDPOINT": expired.url("")],
                files: files
            )
            await #expect {
                try await onThread { try none.credentials() }
            } throws: { error in
                "\(error)".contains("expired at")
            }
            // An expiry written with microseconds is read, not dropped (credentials kept for ever).
            let micro = try await HelperServer(
                script: "fake-metadata.py",
                directory,
                name: "micro",
                ["--lifetime", "3600", "--microseconds"]
            )
            defer { micro.stop() }
            let precise = try CredentialChain(
                environment: ["AWS_EC2_METADATA_SERVICE_ENDPOINT": micro.url("")],
                files: files
            )
            let expiry = try #require(try await onThread { try precise.credentials() }.expiration)
            #expect(abs(expiry.timeIntervalSinceNow - 3600) < 120)
            #expect(CredentialChain.date("2026-11-28T10:00:00.123456Z") == CredentialChain.date("2026-11-28T10:00:00Z"))
            let unreadable = try CredentialChain.decode(
                #"{"AccessKeyId":"A","SecretAccessKey":"S","Token":"T","Expiration":"soon"}"#,
                from: "a test",
                now: Date(timeIntervalSince1970: 0)
            )
            #expect(unreadable.expiration == Date(timeIntervalSince1970: CredentialChain.assumedLifetime))
        }
    }

    @Test("the container credentials endpoint, with its authorization token from a file")
    func containerEndpoint() async throws {
        try await withTemporaryDirectory("container") { directory in
            let server = try await HelperServer(
                script: "fake-metadata.py",
                directory,
                name: "container",
                ["--container-token", "Bearer ctr-token", "--secret", "ctr-secret"]
            )
            defer { server.stop() }
            let tokenFile = directory.file("token")
            try "Bearer ctr-token\n".write(toFile: tokenFile, atomically: true, encoding: .utf8)
            var environment = [
                "AWS_CONTAINER_CREDENTIALS_FULL_URI": server.url("/creds"),
                "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE": tokenFile, "AWS_EC2_METADATA_DISABLED": "true",
            ]
            let files = SharedConfigFiles(settings: [:], profile: "default")
            let first = environment
            let found = try await onThread { try CredentialChain(environment: first, files: files).credentials() }
            #expect(found.accessKeyID == "AKIDFAKE1" && found.secretAccessKey == "ctr-secret")
            // A wrong token: refused, and the error names the endpoint, never a secret.
            environment["AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE"] = nil
            environment["AWS_CONTAINER_AUTHORIZATION_TOKEN"] = "Bearer wrong"
            let chain = try CredentialChain(environment: environment, files: files)
            await #expect {
                try await onThread { try chain.credentials() }
            } throws: { error in
                "\(error)".contains("container credentials endpoint") && "\(error)".contains("403")
                    && !"\(error)".contains("wrong")
            }
        }
    }
}
