// swift-tools-version:6.0
import PackageDescription

// Linux only: the code uses Glibc, inotify (SQLite change notifications), /proc/self/fd (writing
// outputs through a held descriptor), private mount namespaces in tests, and FFmpeg 5.1 as
// Debian bookworm ships it. No `platforms:` entry claims otherwise; the Linux-specific files stop
// a build elsewhere with an `#error` that says so.
let package = Package(
    name: "jobctl",
    products: [
        .executable(name: "jobctl", targets: ["jobctl"]),
        .library(name: "Media", targets: ["Media"]),
        .library(name: "Queue", targets: ["Queue"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-crypto", from: "3.12.3"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-nio-extras", from: "1.35.2"),
        .package(url: "https://github.com/hummingbird-project/swift-mustache", from: "2.1.1"),
    ],
    targets: [
        // FFmpeg 5.1 (Debian bookworm) through a module map and static inline shims.
        .systemLibrary(
            name: "CFFmpeg",
            pkgConfig: "libavformat",
            providers: [
                .apt([
                    "libavformat-dev", "libavcodec-dev", "libavutil-dev", "libswscale-dev", "libswresample-dev",
                    "libavfilter-dev",
                ])
            ]
        ),
        // Shared primitives: the one error shape (CodedError), the one atomic Flag, the one bridge
        // from async code to long blocking work (onDedicatedThread).
        .target(name: "JobctlCore"),
        // The AVFoundation-shaped export pipeline: Asset, AssetReader, AssetWriter, ExportSession, presets, ranges.
        .target(
            name: "Media",
            dependencies: [
                "CFFmpeg", "JobctlCore", "Streaming",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // Adaptive streaming (issue 29), the pure parts: ladders, CMAF boxes, playlists, the MPD, the rules.
        .target(name: "Streaming"),
        // The job model, the status state machine, the retry policy and the JobStore protocol.
        .target(name: "Queue", dependencies: ["JobctlCore"]),
        // The schema as SQL (migrations/DIALECT/NNNN_name.DIALECT.sql), embedded in the binary.
        .target(
            name: "QueueMigrations",
            path: "migrations",
            resources: [.embedInCode("sqlite"), .embedInCode("postgres")]
        ),
        // The job table in SQLite (GRDB), for one host.
        .target(
            name: "QueueSQLite",
            dependencies: ["Queue", "QueueMigrations", "JobctlCore", .product(name: "GRDB", package: "GRDB.swift")]
        ),
        // The JobStore conformance suite, written once and run against every store.
        .target(name: "QueueTestKit", dependencies: ["Queue"]),
        // The job table in PostgreSQL (postgres-nio), for a fleet of hosts.
        .target(
            name: "QueuePostgres",
            dependencies: [
                "Queue", "QueueMigrations", "JobctlCore",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // libcurl through typed shims for its variadic setopt.
        .systemLibrary(name: "CCurl", pkgConfig: "libcurl", providers: [.apt(["libcurl4-openssl-dev"])]),
        // The general HTTP client every outbound request goes through: the address guard (no
        // private, loopback or metadata addresses unless allowed), libcurl with typed shims, and
        // the bridge that runs a blocking request on a thread of its own.
        .target(name: "SafeHTTP", dependencies: ["CCurl", "JobctlCore"]),
        // Object storage (s3://): the SigV4 signer, the AWS configuration and credential chain,
        // and the S3 operations jobctl uses, over SafeHTTP's libcurl sender.
        .target(
            name: "ObjectStorage",
            dependencies: ["SafeHTTP", "JobctlCore", .product(name: "Crypto", package: "swift-crypto")]
        ),
        // Webhooks: Standard Webhooks signing, the delivery schedule, the dispatcher.
        .target(
            name: "Webhooks",
            dependencies: [
                "SafeHTTP", "Queue",
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // The worker: claim loop, leases and heartbeats, cancellation, graceful shutdown.
        .target(
            name: "Worker",
            dependencies: [
                "Media", "Queue", "SafeHTTP", "JobctlCore", "JobKinds", "ObjectStorage",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // The job kinds, one file each (Kinds/), registered once (`JobKinds.all`): what each
        // takes from `jobctl submit` and `POST /v1/jobs`, the one submission path that checks a
        // draft into a `JobRequest`, and how a worker prepares and runs each (Running/).
        .target(
            name: "JobKinds",
            dependencies: ["Media", "Queue", "JobctlCore", "SafeHTTP", "ObjectStorage", "Streaming"]
        ),
        // Prometheus metrics and /healthz: the worker's --metrics-port server and the routes
        // `jobctl serve` adds (one HealthAndMetrics type), JSON logs, queue gauges.
        .target(
            name: "Observability",
            dependencies: [
                "Queue",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // The HTTP API's routes (Hummingbird 2): requests and responses, API keys and their
        // scopes, middleware, the job watch, the OpenAPI document it serves; its route groups
        // (open, keyed `/v1`) are assembled by JobAPIServer.
        .target(
            name: "JobAPI",
            dependencies: [
                "Queue", "JobctlCore", "Media", "SafeHTTP", "JobKinds", "Observability", "ObjectStorage",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HummingbirdTLS", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ],
            resources: [.embedInCode("openapi.json")]
        ),
        // The dashboard on `jobctl serve` (issue 30), without HTTP: the filter language, the
        // session cookie, the pages (Mustache templates embedded in the binary).
        .target(
            name: "Dashboard",
            dependencies: [
                "Queue", "JobctlCore",
                .product(name: "Mustache", package: "swift-mustache"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            resources: [.embedInCode("Templates"), .embedInCode("Assets")]
        ),
        // The dashboard's HTTP side (issue 30): the `/ui` routes as a group of their own, its
        // session middleware (sign-in, CSRF, scopes), the pages' event stream and a job's files,
        // over JobAPI's keys, watch and limits and Dashboard's pages.
        .target(
            name: "DashboardHTTP",
            dependencies: [
                "JobAPI", "Dashboard", "Queue", "JobctlCore", "JobKinds", "ObjectStorage",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The transport of `jobctl serve`: the router assembled from its groups (JobAPI's open
        // and keyed routes, DashboardHTTP's `/ui`), the Hummingbird application, TLS, request
        // tasks, and long polls parked below Hummingbird (LongPollInterceptor, PollDesk).
        .target(
            name: "JobAPIServer",
            dependencies: [
                "JobAPI", "DashboardHTTP", "Queue", "JobctlCore",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HummingbirdTLS", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // posix_spawn for the test helpers (Foundation's Process.run() crashes intermittently on Linux).
        .target(name: "CSpawn"),
        // Test helpers shared by every test target: fixtures made with the ffmpeg CLI, ffprobe as an oracle.
        .target(name: "MediaTestKit", dependencies: ["CSpawn"]),
        // Generates every fixture before a test run (make test), outside any test's time limit.
        .executableTarget(name: "jobctl-fixtures", dependencies: ["MediaTestKit"]),
        // What every command shares: the global, preset, limit and database options, the one
        // failure line and exit code, the terminal (jobctl and jobctl-bench).
        .target(
            name: "CommandLineSupport",
            dependencies: [
                "JobctlCore", "Media", "Queue", "QueueSQLite", "QueuePostgres", "Observability",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // `jobctl-bench`: the queue and webhook benchmarks (`make bench`), out of the shipped
        // binary; it runs the `jobctl` beside it as its workers.
        .executableTarget(
            name: "jobctl-bench",
            dependencies: [
                "CommandLineSupport", "JobctlCore", "Queue", "QueueSQLite", "QueuePostgres", "Webhooks", "SafeHTTP",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .executableTarget(
            name: "jobctl",
            dependencies: [
                "Media", "Queue", "QueueSQLite", "QueuePostgres", "Worker", "Webhooks", "SafeHTTP", "Observability",
                "JobAPI", "JobAPIServer", "JobKinds", "CommandLineSupport", "ObjectStorage", "Streaming",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(name: "MediaTests", dependencies: ["Media", "MediaTestKit", "JobctlCore", "Streaming"]),
        .testTarget(name: "JobctlTests", dependencies: ["Media", "MediaTestKit"]),
        // In-process tests: pure logic, the in-memory and SQLite stores, media on tiny clips; seconds in all.
        .testTarget(
            name: "QueueTests",
            dependencies: [
                "Queue", "JobctlCore", "QueueSQLite", "QueuePostgres", "QueueMigrations", "QueueTestKit",
                "MediaTestKit",
            ]
        ),
        .testTarget(name: "SafeHTTPTests", dependencies: ["SafeHTTP", "JobctlCore", "MediaTestKit"]),
        .testTarget(name: "StreamingTests", dependencies: ["Streaming"]),
        .testTarget(name: "DashboardTests", dependencies: ["Dashboard", "Queue", "QueueTestKit"]),
        // The signer against AWS's vectors, configuration and credentials (pure, and with a
        // local metadata endpoint), and the S3 operations against a real SeaweedFS server.
        .testTarget(name: "ObjectStorageTests", dependencies: ["ObjectStorage", "SafeHTTP", "MediaTestKit"]),
        .testTarget(
            name: "WebhookUnitTests",
            dependencies: ["Webhooks", "SafeHTTP", "Queue", "JobctlCore", "QueueTestKit", "MediaTestKit"]
        ),
        // The worker in this process: its state machines (milliseconds), and whole workers on the
        // in-memory store with real FFmpeg on tiny clips (about a second each).
        .testTarget(
            name: "WorkerUnitTests",
            dependencies: [
                "Worker", "Queue", "Media", "MediaTestKit", "JobKinds", "JobctlCore", "ObjectStorage", "SafeHTTP",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // Integration tests, fewer and slower: real worker processes (SIGKILL, SIGTERM, SIGSTOP),
        // a real PostgreSQL server, real HTTP receivers, database files damaged from outside.
        // The HTTP API through Hummingbird's test client (routes, auth, scopes) on real stores.
        .testTarget(
            name: "APITests",
            dependencies: [
                "JobAPI", "JobAPIServer", "DashboardHTTP", "Queue", "JobKinds", "QueueSQLite", "QueueTestKit",
                "MediaTestKit", "Media", "Dashboard",
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ]
        ),
        .testTarget(
            name: "IntegrationTests",
            dependencies: [
                "Queue", "QueueSQLite", "QueuePostgres", "QueueTestKit", "MediaTestKit", "JobKinds", "Media",
                "SafeHTTP", "ObjectStorage",
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
