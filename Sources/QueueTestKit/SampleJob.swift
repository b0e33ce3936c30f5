import Foundation
import Queue

extension Job {
    /// A job as a store would return it, for tests of what is shown about jobs (pages, JSON):
    /// an export of `input` with the `low` preset, first attempt of three, nothing else set.
    public static func sample(
        id: JobID = JobID("0192f000-0000-7000-8000-000000000001"),
        status: JobStatus = .unknown,
        input: String = "/in/a.mov",
        createdAt: Date = Date(timeIntervalSince1970: 1_795_780_800)
    ) -> Job {
        Job(
            id: id,
            kind: .export,
            status: status,
            input: input,
            output: "/out/a.mp4",
            preset: "low",
            presetSettings: .object([:]),
            format: nil,
            range: nil,
            priority: 0,
            attempt: 1,
            maxAttempts: 3,
            progress: 0,
            tracks: [],
            result: nil,
            error: nil,
            webhook: nil,
            metadata: [:],
            idempotencyKey: nil,
            worker: nil,
            cancelRequested: false,
            runAt: createdAt,
            createdAt: createdAt,
            startedAt: nil,
            finishedAt: nil
        )
    }
}
