import Foundation
import MediaTestKit
import Testing

/// Damaged media from a fixed seed: bytes flipped in small files of each container, exported
/// by real `jobctl export` processes with a re-encoding preset and with `passthrough`. Each
/// export ends within 30 s, never crashes, and either succeeds with an output that is not
/// longer than its source, or fails with an input error (never retried by the queue) on one
/// line. A crash found here once: a file whose streams could not be probed was closed twice.
@Suite("Fuzzed inputs", .timeLimit(.minutes(5)))
struct FuzzTests {
    static let seeds: [Fixture] = [.seedMP4, .seedMOV, .seedMKV, .seedTS, .seedAVI, .seedMP3]
    /// Codes an input's damage may produce; `output_unwritable`, `internal` and the like would
    /// mean a damaged input was taken for a failure worth retrying (or a bug).
    static let inputErrors: Set<String> = [
        "input_unreadable", "input_unsupported", "decode_failed", "preset_incompatible", "limit_exceeded",
    ]
    static let mutantsPerSeed = 12

    /// A deterministic generator (SplitMix64), so a failure names a mutant that can be rebuilt.
    struct Generator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        mutating func below(_ bound: Int) -> Int { Int(next() % UInt64(bound)) }
    }

    /// Mutant `n` of `data`: 1, 2, 4 … 1024 random bits flipped, or (every fourth) a run of
    /// bytes overwritten with noise.
    static func mutant(_ n: Int, of data: Data, seed: UInt64) -> Data {
        var generator = Generator(state: seed &+ UInt64(n) &* 7919)
        var bytes = [UInt8](data)
        if n % 4 == 3 {
            let length = 1 + generator.below(4096)
            let start = generator.below(max(1, bytes.count - length))
            for index in start..<min(bytes.count, start + length) {
                bytes[index] = UInt8(truncatingIfNeeded: generator.next())
            }
        } else {
            for _ in 0..<(1 << min(n, 10)) {
                bytes[generator.below(bytes.count)] ^= UInt8(1 << generator.below(8))
            }
        }
        return Data(bytes)
    }

    struct Run: Sendable, CustomStringConvertible {
        var input: String
        var preset: String
        var range: String?
        var description: String {
            "\((input as NSString).lastPathComponent) \(preset)\(range.map { " --range \($0)" } ?? "")"
        }
    }

    @Test func damagedFilesFailCleanlyOrExport() async throws {
        try await withTemporaryDirectory("fuzz") { directory in
            var runs: [Run] = []
            for (position, seed) in Self.seeds.enumerated() {
                let source = try await Fixtures.shared.path(seed)
                let data = try Data(contentsOf: URL(fileURLWithPath: source))
                for n in 0..<Self.mutantsPerSeed {
                    let path = directory.file("\(seed)-\(n).\(seed.fileExtension)")
                    try Self.mutant(n, of: data, seed: 0x5EED_0000 + UInt64(position)).write(
                        to: URL(fileURLWithPath: path)
                    )
                    runs.append(Run(input: path, preset: "low", range: n % 2 == 0 ? nil : "0.5s+1s"))
                    runs.append(Run(input: path, preset: "passthrough"))
                }
            }
            // Two at a time: the machine has two cores.
            var failures: [String] = []
            var codes: [String: Int] = [:]
            for batch in stride(from: 0, to: runs.count, by: 2).map({ Array(runs[$0..<min($0 + 2, runs.count)]) }) {
                let outcomes = try await withThrowingTaskGroup(of: (Run, String?, String).self) { group in
                    for (slot, run) in batch.enumerated() {
                        group.addTask { try await Self.check(run, output: directory.file("out-\(slot)")) }
                    }
                    return try await group.reduce(into: []) { $0.append($1) }
                }
                for (run, failure, code) in outcomes {
                    codes[code, default: 0] += 1
                    if let failure { failures.append("\(run): \(failure)") }
                }
            }
            #expect(failures.isEmpty, "\(failures.count) of \(runs.count):\n\(failures.joined(separator: "\n"))")
            #expect(codes["ok", default: 0] > runs.count / 4 && codes.count > 2, "a useful mix of outcomes: \(codes)")
            print("fuzz outcomes over \(runs.count) exports: \(codes.sorted { $0.key < $1.key })")
        }
    }

    /// Runs one export; returns what went wrong (or `nil`) and the outcome's code (`ok`).
    static func check(_ run: Run, output directory: String) async throws -> (Run, String?, String) {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let output = directory + "/out." + (run.preset == "passthrough" ? "mov" : "mp4")
        try? FileManager.default.removeItem(atPath: output)
        let arguments =
            ["export", run.input, "--preset", run.preset, "-o", output] + (run.range.map { ["--range", $0] } ?? [])
        let process = try JobctlProcess(arguments, log: directory + "/stderr")
        let started = ContinuousClock.now
        guard let exit = try await process.waitForExit(timeout: .seconds(30)) else {
            return (run, "still running after 30 s (killed)", "timeout")
        }
        let elapsed = ContinuousClock.now - started
        let stderr = process.log.trimmingCharacters(in: .whitespacesAndNewlines)
        let leftovers = ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).filter {
            $0.hasSuffix(".jobctl.tmp")
        }
        if !leftovers.isEmpty { return (run, "left \(leftovers)", "leftovers") }
        switch exit.status {
        case 0:
            let probe = try await FFProbe.probe(output)
            let duration = probe.format.durationSeconds ?? 0
            if duration > 4 { return (run, "an output of \(duration) s from a 2 s source", "ok") }
            return (run, nil, "ok")
        case 1:
            let code = stderr.hasPrefix("error: ") ? String(stderr.dropFirst(7).prefix { $0 != ":" }) : "?"
            if !inputErrors.contains(code) { return (run, "code \(code): \(stderr)", code) }
            if stderr.contains("\n") { return (run, "more than one line: \(stderr)", code) }
            return (run, nil, code)
        default:
            return (run, "exit \(exit.status) after \(elapsed): \(stderr.prefix(300))", "exit \(exit.status)")
        }
    }
}
