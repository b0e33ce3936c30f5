import Foundation
import MediaTestKit
import Queue
import QueueSQLite
import Testing

/// The parts of a split export between their children and the join (issue 42, items 7 and 8):
/// a part the staging sweep removed after a cancel, or one that is not the file its child
/// wrote (swapped, duplicated, truncated, replaced), is made again before the join uses it.
extension SplitJobTests {
    /// What happens to a parent's scratch directory between a cancel and the retry.
    enum Loss: String, CaseIterable, CustomStringConvertible, Sendable {
        /// The staging sweep's work, 10 minutes after a failure or a cancel (a worker's own sweep).
        case wholeDirectory
        /// The audio alone (the segments rerun by the retry remade the directory).
        case audioPart
        var description: String { rawValue }
    }

    @Test("a retry makes again whatever part the scratch lost after a cancel", .serialized, arguments: Loss.allCases)
    func aRetryRemakesLostParts(loss: Loss) async throws {
        let setup = try await Setup("split-lost")
        defer {
            setup.directory.remove()
            setup.server.stop()
        }
        // Every part made, the join claimed: its worker is killed there and the job cancelled.
        // Killed first: a worker frozen by SIGSTOP may be frozen inside another thread's write
        // (a heartbeat), holding the database's write lock until it dies, and the cancel would
        // wait for it in vain (a CI run on a loaded machine failed so).
        let (id, input, output, a) = try await stoppedAtTheJoin(setup)
        a.signal(SIGKILL)
        _ = try await a.waitForExit(timeout: .seconds(10))
        let cancel = try await Jobctl.run(["cancel", id.rawValue, "--db", setup.db])
        #expect(cancel.status == 0, "\(cancel.stderr)")
        // The next worker's claim ends the join as cancelled once the killed worker's lease expired.
        let b = try Self.worker(setup, "B", once: false, secret: secret, arguments: ["--retry-delay", "100ms"])
        defer { b.signal(SIGKILL) }
        let cancelled = try await eventually(within: .seconds(60)) { try await setup.job(id).status == .cancelled }
        try #require(cancelled, "the join did not end cancelled: \(b.log)")

        let directory = setup.directory.file("scratch/\(id).split")
        var worker = b
        if loss == .wholeDirectory {
            // The workers' own sweep: the directory of a job that ended 10 minutes ago (its
            // time set back an hour) goes when the next worker starts.
            try FileManager.default.setAttributes(
                [.modificationDate: Date(timeIntervalSinceNow: -3600)],
                ofItemAtPath: directory
            )
            b.signal(SIGTERM)
            _ = try await b.waitForExit(timeout: .seconds(30))
            worker = try Self.worker(setup, "C", once: false, secret: secret, arguments: ["--retry-delay", "100ms"])
            let swept = try await eventually(within: .seconds(60)) {
                !FileManager.default.fileExists(atPath: directory)
            }
            try #require(swept, "the sweep left \(directory): \(worker.log)")
        } else {
            try FileManager.default.removeItem(atPath: directory + "/audio.m4a")
        }
        defer { worker.signal(SIGKILL) }
        let retry = try await Jobctl.run(["retry", id.rawValue, "--db", setup.db])
        #expect(retry.status == 0, "\(retry.stderr)")
        let ended = try await eventually(within: .seconds(240)) { try await setup.job(id).status.isTerminal }
        try #require(ended, "the retried job did not end: \(worker.log)")
        let job = try await setup.job(id)
        #expect(job.status == .completed, "\(job.error?.code.rawValue ?? "") \(job.error?.message ?? "")")
        // Only the join ran again (the children had completed), remaking what was gone.
        let children = try await Self.children(setup, of: id)
        #expect(children.allSatisfy { $0.status == .completed && $0.attempt == 1 })
        let segments = try #require(job.result?["segments"]?.arrayValue)
        #expect(segments.count == 3)
        let remade = segments.map { $0["reencoded"] != nil }
        #expect(remade == Array(repeating: loss == .wholeDirectory, count: 3), "\(segments)")
        try await Self.expectOneProcessExport(output, of: input, range: "0s+12s", in: setup.directory)
        #expect(setup.directoryContents(setup.directory.file("scratch")).isEmpty)
    }

    /// What is done to a part after its child completed and before the join reads it.
    enum Damage: String, CaseIterable, CustomStringConvertible, Sendable {
        case swappedSegments
        case duplicatedSegment
        case truncatedAudio
        case replacedAudio
        var description: String { rawValue }

        /// The segments the join must make again.
        var segments: Set<Int> {
            switch self {
            case .swappedSegments: [1, 2]
            case .duplicatedSegment: [2]
            case .truncatedAudio, .replacedAudio: []
            }
        }

        func apply(in directory: String) async throws {
            let files = FileManager.default
            let (one, two, audio) = (
                directory + "/segment-00001.mp4", directory + "/segment-00002.mp4", directory + "/audio.m4a"
            )
            switch self {
            case .swappedSegments:
                try files.moveItem(atPath: one, toPath: directory + "/swap.mp4")
                try files.moveItem(atPath: two, toPath: one)
                try files.moveItem(atPath: directory + "/swap.mp4", toPath: two)
            case .duplicatedSegment:
                try files.removeItem(atPath: two)
                try files.copyItem(atPath: one, toPath: two)
            case .truncatedAudio:
                // Half of the sound, still a well-formed file.
                let cut = directory + "/cut.m4a"
                _ = try await ProcessRunner.check(
                    "ffmpeg",
                    ["-nostdin", "-v", "error", "-i", audio, "-c", "copy", "-t", "6", cut]
                )
                try files.removeItem(atPath: audio)
                try files.moveItem(atPath: cut, toPath: audio)
            case .replacedAudio:
                // Another part's file in its place: no audio track at all.
                try files.removeItem(atPath: audio)
                try files.copyItem(atPath: directory + "/segment-00000.mp4", toPath: audio)
            }
        }
    }

    @Test("the join makes again a part that is not the file its child wrote", .serialized, arguments: Damage.allCases)
    func theJoinRemakesDamagedParts(damage: Damage) async throws {
        let setup = try await Setup("split-damaged-part")
        defer {
            setup.directory.remove()
            setup.server.stop()
        }
        let (id, input, output, worker) = try await stoppedAtTheJoin(setup)
        try await damage.apply(in: setup.directory.file("scratch/\(id).split"))
        kill(worker.pid, SIGCONT)
        #expect(try await worker.waitForExit(timeout: .seconds(180))?.status == 0, "\(worker.log)")

        let job = try await setup.job(id)
        #expect(job.status == .completed, "\(job.error?.code.rawValue ?? "") \(job.error?.message ?? "")")
        let children = try await Self.children(setup, of: id)
        let segments = try #require(job.result?["segments"]?.arrayValue)
        try #require(segments.count == 3 && children.count == 4)
        for (index, segment) in segments.enumerated() {
            #expect((segment["reencoded"] != nil) == damage.segments.contains(index), "segment \(index): \(segment)")
        }
        // The audio made again is said so.
        let warnings = job.result?["warnings"]?.arrayValue ?? []
        #expect((!warnings.isEmpty) == damage.segments.isEmpty, "\(warnings)")
        try await Self.expectOneProcessExport(output, of: input, range: "0s+12s", in: setup.directory)
        // Every frame in its place: the picture is the one-process export's, not another segment's.
        let psnr = try await Self.psnr(output, setup.directory.file("whole.mp4"))
        #expect(psnr > 30, "\(psnr) dB against the one-process export")
    }

    /// A segment the join makes again is encoded as its child encoded it (issue 43): the
    /// same pre- and post-roll, so the same bytes, and the joined file is the one a split
    /// export without damage gives. The range's 15 fps end is where the post-roll a child
    /// computes from the frame rate (48 frames, 3.2 s) and a fixed one (2.5 s, shorter than the
    /// encoder's lookahead: it flushes) used to differ.
    @Test("a segment the join makes again is the bytes its child made", .serialized)
    func aRemadeSegmentIsItsChildsBytes() async throws {
        let setup = try await Setup("split-remade-bytes")
        defer {
            setup.directory.remove()
            setup.server.stop()
        }
        var outputs: [String] = []
        for damage in [nil, Damage.swappedSegments] {
            let (id, _, output, worker) = try await stoppedAtTheJoin(
                setup,
                fixture: .splitVFR,
                range: "12s+12s",
                output: "split-\(damage?.rawValue ?? "whole").mp4"
            )
            try await damage?.apply(in: setup.directory.file("scratch/\(id).split"))
            kill(worker.pid, SIGCONT)
            #expect(try await worker.waitForExit(timeout: .seconds(180))?.status == 0, "\(worker.log)")
            let job = try await setup.job(id)
            try #require(job.status == .completed, "\(job.error?.code.rawValue ?? "") \(job.error?.message ?? "")")
            let segments = try #require(job.result?["segments"]?.arrayValue)
            let remade = Set(segments.indices.filter { segments[$0]["reencoded"] != nil })
            #expect(remade == (damage?.segments ?? []), "\(segments)")
            outputs.append(output)
        }
        #expect(
            FileManager.default.contentsEqual(atPath: outputs[0], andPath: outputs[1]),
            "the remade segments are not the bytes their children made"
        )
    }

    /// A split export of `range` of `fixture` in 4 s segments (12 s: the audio and three
    /// segments) whose every part is made, its worker stopped (SIGSTOP) as it claims the join.
    func stoppedAtTheJoin(
        _ setup: Setup,
        fixture: Fixture = .splitCFR,
        range: String = "0s+12s",
        output name: String = "split.mp4"
    ) async throws -> (id: JobID, input: String, output: String, worker: JobctlProcess) {
        let input = try await Fixtures.shared.path(fixture)
        let output = setup.directory.file(name)
        let id = try await setup.submit(input, ["--split", "4s", "--range", range, "-o", output])
        let worker = try Self.worker(setup, "A", failpoints: "before-join", secret: secret)
        try #require(
            try await eventually(within: .seconds(240)) { FencingTests.isStopped(worker.pid) },
            "the join was never claimed: \(worker.log)"
        )
        return (id, input, output, worker)
    }

    /// The mean luma PSNR (dB) of `a` against `b`, frame by frame, by ffmpeg's psnr filter.
    static func psnr(_ a: String, _ b: String) async throws -> Double { try await FFProbe.lumaPSNR(a, b) }
}
