import Foundation
import MediaTestKit
import Queue
import QueueSQLite
import QueueTestKit
import Testing

/// Every numeric option of every kind over its whole domain, through `jobctl submit` and a real
/// worker process (issue 25: 2^32 samples per pixel once trapped in the `.dat` writer and took
/// down every worker that claimed the job). Each value is either refused at submit (exit 64,
/// one `error:` line naming the flag) or queued; every queued job then ends with a coded result
/// in one `worker --once` process, which exits 0. Rows written around `submit` (options that it
/// would refuse, stored straight into the table) end `failed` with a code too.
@Suite("Option domains", .serialized, .timeLimit(.minutes(10)))
struct OptionDomainTests {
    /// The edges of an integer option's domain, and a few values chosen at random from a fixed
    /// seed (the same every run, so a failure names a value that can be tried again).
    static let integers: [String] = {
        var edges = [
            "-9223372036854775808", "-4294967296", "-2147483648", "-1", "0", "1", "2", "3", "8", "16", "100",
            "101", "255", "256", "1000", "1001", "16384", "16385", "65535", "65536", "100000", "100001",
            "16777216", "16777217", "2147483647", "2147483648", "4294967295", "4294967296", "9223372036854775807",
            "9223372036854775808", "1.5", "nan", "inf", "-inf", "1e3", "",
        ]
        var generator = SplitMix64(seed: 25)
        for _ in 0..<6 { edges.append(String(Int64(bitPattern: generator.next()) >> Int64(generator.next() % 63))) }
        return edges
    }()

    /// The edges of a duration option (`--every`, `--tolerance`, a time of `--at`, `--range`).
    static let durations: [String] = [
        "0", "0s", "1ms", "0.000001", "0.0000001", "1", "2.5s", "-1s", "nan", "inf", "1e3", "59:59", "1:00:00",
        "999999999", "999999999999", "9999999999999", "999999:59:59", "1000000:00:00", "25%", "101%", "-5%",
        "nan%", "end",
    ]

    /// (flag, kind, the extra flags that make it apply, values).
    static let options: [(flag: String, kind: String, extra: [String], values: [String])] = [
        ("--samples-per-pixel", "waveform", ["--files", "json,dat"], integers),
        ("--pixels-per-second", "waveform", ["--files", "json,dat"], integers),
        ("--bits", "waveform", ["--files", "dat"], integers),
        ("--track", "waveform", [], integers),
        ("--width", "waveform", ["--files", "png"], integers),
        ("--height", "waveform", ["--files", "png"], integers),
        ("--count", "thumbnails", [], integers),
        ("--every", "thumbnails", [], durations),
        ("--tolerance", "thumbnails", [], durations),
        ("--at", "thumbnails", [], durations),
        ("--size", "thumbnails", [], ["0x", "1x", "x1", "16384x", "16385x", "4294967296x", "x-1", "2x2", "nanx"]),
        ("--tiles", "storyboard", [], integers),
        ("--columns", "storyboard", [], integers),
        ("--tile-size", "storyboard", [], ["0x", "1x", "16384x", "16385x", "x4294967296", "-1x"]),
        ("--priority", "export", ["--preset", "low"], integers),
        ("--max-attempts", "export", ["--preset", "low"], integers),
        ("--range", "export", ["--preset", "low"], durations + ["1s+0s", "1s+1ms", "0-0", "5s-1s", "1e9s+1s"]),
    ]

    /// What a job may end with: a result, or one of the contract's codes for a bad request or
    /// input. Never `internal`, `lease_lost` or `worker_crashed` (a worker died).
    static let codes: Set<String> = [
        "invalid_request", "limit_exceeded", "range_out_of_bounds", "input_unsupported", "preset_unknown",
        "decode_failed",
    ]

    @Test func everyValueIsRefusedAtSubmitOrEndsWithACode() async throws {
        let directory = try TemporaryDirectory("domains")
        defer { directory.remove() }
        let db = directory.file("jobs.sqlite")
        let input = try await Fixtures.shared.path(.impulses)
        var queued: [(JobID, String)] = []
        var refused = 0
        for (index, option) in Self.options.enumerated() {
            for (number, value) in option.values.enumerated() {
                let output = directory.file("out-\(index)-\(number)" + (option.kind == "export" ? ".mp4" : ""))
                let arguments =
                    ["submit", input, "--db", db, "--kind", option.kind, "-o", output] + option.extra + [
                        "\(option.flag)=\(value)"
                    ]
                let result = try await Jobctl.run(arguments)
                let what = "\(option.kind) \(option.flag)=\(value)"
                switch result.status {
                case 0:
                    queued.append((JobID(result.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines)), what))
                case 64:
                    refused += 1
                    let lines = result.stderr.split(separator: "\n")
                    #expect(lines.count == 1 && lines[0].hasPrefix("error: "), "\(what): \(result.stderr)")
                case 1:
                    // What submit finds in the local input (no such track, too many points per
                    // second for its rate): a code of the contract, on one line.
                    refused += 1
                    let code = result.stderr.dropFirst("error: ".count).prefix { $0 != ":" }
                    #expect(Self.codes.contains(String(code)), "\(what): \(result.stderr)")
                default:
                    Issue.record("\(what): exit \(result.status): \(result.stderr)")
                }
            }
        }
        #expect(refused > 0 && queued.count > 0)

        // Rows no submit would write: each kind's stored options with a number pushed out of
        // its domain.
        let store = try SQLiteJobStore(path: db)
        var crafted: [(JobID, String)] = []
        for (id, what) in queued.prefix(while: { _ in crafted.count < 60 }) {
            let job = try #require(try await store.job(id))
            guard job.kind != .export, case .object(let settings) = job.presetSettings else { continue }
            for (key, value) in settings {
                guard case .number = value else { continue }
                for extreme in [4_294_967_296.0, 9.3e18, -1, 0, 1e300] where crafted.count < 60 {
                    var changed = settings
                    changed[key] = .number(extreme)
                    let (made, _) = try await store.submit(
                        JobRequest(
                            kind: job.kind,
                            input: job.input,
                            output: job.output + "-crafted-\(crafted.count)",
                            preset: job.preset,
                            presetSettings: .object(changed),
                            maxAttempts: 100
                        )
                    )
                    crafted.append((made.id, "\(what), stored \(key)=\(extreme)"))
                }
            }
        }
        #expect(crafted.count >= 20)

        let worker = try JobctlProcess(
            ["worker", "--db", db, "--once", "--concurrency", "2", "--name", "domains"],
            log: directory.file("worker.log")
        )
        let exit = try await worker.waitForExit(timeout: .seconds(480))
        #expect(exit?.status == 0, "the worker died: \(worker.log.suffix(2000))")
        let craftedIDs = Set(crafted.map(\.0))
        for (id, what) in queued + crafted {
            let job = try #require(try await store.job(id))
            switch job.status {
            case .completed:
                #expect(job.result != nil, "\(what)")
            case .failed:
                let code = job.error?.code.rawValue ?? "none"
                // A crafted number that does not fit its field's type (4294967296 for a 32-bit
                // count, 1e300) does not read at all: database_corrupt, naming the job.
                let allowed = craftedIDs.contains(id) ? Self.codes.union(["database_corrupt"]) : Self.codes
                #expect(allowed.contains(code), "\(what): \(code): \(job.error?.message ?? "")")
                if code == "database_corrupt" {
                    #expect(job.error?.message.contains("job \(id)") == true, "\(job.error?.message ?? "")")
                }
                #expect(job.attempt == 1, "\(what): a bad request was tried \(job.attempt) times")
            default:
                Issue.record("\(what): left \(job.status)")
            }
        }
        #expect(!directory.contents().contains { $0.hasSuffix(".jobctl.tmp") }, "a temporary file was left")
    }
}
