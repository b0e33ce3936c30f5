import Foundation
import Queue
import Testing

// Conformance checks: submitting and reading.
extension Checks {
    static func submitRoundTrip(_ h: Harness) async throws {
        let settings: JSONValue = .object([
            "name": .string("low"),
            "video": .object([
                "codec": .string("libx264"), "maxWidth": .number(426), "maxHeight": .number(240),
                "bitrate": .number(300_000),
                "crf": .null, "scale": .number(0.5),
            ]),
            "audio": .object([
                "channels": .number(1), "bitrate": .number(64_000), "sampleRate": .number(44_100), "zero": .number(0),
            ]),
            "faststart": .bool(true),
            "hevc": .bool(false),
            "extra": .array([.string("a/b"), .number(-1.25), .bool(true), .null, .array([]), .object([:])]),
        ])
        let request = JobRequest(
            kind: .export,
            input: "/data/in put/talk ü.mov",
            output: "/out/clip.mp4",
            preset: "low",
            presetSettings: settings,
            format: "mp4",
            range: Job.Range(start: 1.5, duration: 3.25),
            priority: 7,
            maxAttempts: 5,
            idempotencyKey: "round-trip-key",
            metadata: ["customer": "acme", "note": "ünïcode ✓, \"quoted\""],
            webhook: "https://user:pass@app.example/hooks/export?x=1"
        )
        let createdAt = h.clock.milliseconds
        let (submitted, created) = try await h.store.submit(request)
        #expect(created)

        func checkFields(_ job: Job, _ source: String) {
            #expect(job.id.isWellFormed, "\(source): id \(job.id)")
            #expect(job.id.rawValue == job.id.rawValue.lowercased(), "\(source): id \(job.id)")
            #expect(job.kind == .export, "\(source)")
            #expect(job.status == .unknown, "\(source)")
            #expect(job.input == "/data/in put/talk ü.mov", "\(source)")
            #expect(job.output == "/out/clip.mp4", "\(source)")
            #expect(job.preset == "low", "\(source)")
            #expect(job.presetSettings == settings, "\(source)")
            #expect(job.format == "mp4", "\(source)")
            #expect(job.range == Job.Range(start: 1.5, duration: 3.25), "\(source)")
            #expect(job.priority == 7, "\(source)")
            #expect(job.attempt == 0, "\(source)")
            #expect(job.maxAttempts == 5, "\(source)")
            #expect(job.progress == 0, "\(source)")
            #expect(job.tracks == [], "\(source)")
            #expect(job.result == nil, "\(source)")
            #expect(job.error == nil, "\(source)")
            #expect(
                job.webhook == "https://user:pass@app.example/hooks/export?x=1",
                "\(source): the store keeps the URL it must call"
            )
            #expect(job.metadata == ["customer": "acme", "note": "ünïcode ✓, \"quoted\""], "\(source)")
            #expect(job.idempotencyKey == "round-trip-key", "\(source)")
            #expect(job.worker == nil, "\(source)")
            #expect(job.cancelRequested == false, "\(source)")
            #expect(ms(job.createdAt) == createdAt, "\(source): createdAt")
            #expect(ms(job.runAt) == createdAt, "\(source): runAt")
            #expect(job.startedAt == nil, "\(source)")
            #expect(job.finishedAt == nil, "\(source)")
        }
        checkFields(submitted, "submit's job")
        h.clock.advance(by: .seconds(5))
        for index in h.stores.indices {
            let fetched = try await h.fetch(submitted.id, on: index)
            checkFields(fetched, "job(id) on handle \(index)")
            #expect(fetched == submitted, "job(id) on handle \(index) differs from what submit returned")
        }

        // The optional fields absent, or partly absent.
        let bare = JobRequest(input: "/data/bare.mov", output: "/out/bare.mp4", preset: "passthrough")
        let bareJob = try await h.fetch(try await h.handle(1).submit(bare).job.id)
        #expect(bareJob.presetSettings == .null)
        #expect(bareJob.format == nil)
        #expect(bareJob.range == nil)
        #expect(bareJob.priority == 0)
        #expect(bareJob.maxAttempts == 3)
        #expect(bareJob.webhook == nil)
        #expect(bareJob.metadata == [:])
        #expect(bareJob.idempotencyKey == nil)
        #expect(ms(bareJob.createdAt) == h.clock.milliseconds)
        let toTheEnd = JobRequest(
            input: "/data/end.mov",
            output: "/out/end.m4a",
            preset: "m4a",
            format: "m4a",
            range: Job.Range(start: 0, duration: nil),
            priority: -3
        )
        let toTheEndJob = try await h.fetch(try await h.store.submit(toTheEnd).job.id)
        #expect(toTheEndJob.range == Job.Range(start: 0, duration: nil))
        #expect(toTheEndJob.priority == -3)
        #expect(toTheEndJob.format == "m4a")
        #expect(Set([submitted.id, bareJob.id, toTheEndJob.id]).count == 3, "every job has its own id")

        let unknown = try await h.store.job(JobID.make(at: h.clock.date))
        #expect(unknown == nil, "job(id) of an id never submitted")
    }

    static func idempotencyKey(_ h: Harness) async throws {
        let first = try await h.store.submit(Harness.request("first", priority: 1, key: "key-1"))
        #expect(first.created)
        h.clock.advance(by: .seconds(1))

        var other = Harness.request("second", priority: 9, maxAttempts: 7, key: "key-1")
        other.preset = "medium"
        other.metadata = ["different": "yes"]
        for index in h.stores.indices {
            let again = try await h.handle(index).submit(other)
            #expect(again.created == false, "same key on handle \(index)")
            #expect(again.job.id == first.job.id, "same key on handle \(index)")
            #expect(again.job.input == "/data/first.mov", "the existing job, not the new request")
            #expect(again.job.priority == 1)
            #expect(again.job.maxAttempts == 3)
            #expect(again.job.preset == "low")
            #expect(again.job.metadata == [:])
            #expect(ms(again.job.createdAt) == ms(first.job.createdAt))
        }

        let otherKey = try await h.handle(1).submit(Harness.request("third", key: "key-2"))
        #expect(otherKey.created)
        let noKey1 = try await h.store.submit(Harness.request("fourth"))
        let noKey2 = try await h.store.submit(Harness.request("fourth"))
        #expect(noKey1.created && noKey2.created, "no key: every submit creates a job")
        let ids = [first.job.id, otherKey.job.id, noKey1.job.id, noKey2.job.id]
        #expect(Set(ids).count == 4)
        let all = try await h.store.jobs(status: nil, limit: 100)
        #expect(all.count == 4, "jobs in the table: \(all.map(\.input))")
        #expect(Set(all.map(\.id)) == Set(ids))

        // The same new key from eight processes at once: one job, created once.
        let racing = try await withThrowingTaskGroup(of: (job: Job, created: Bool).self) { group in
            for task in 0..<8 {
                let store = h.handle(task)
                group.addTask { try await store.submit(Harness.request("racer-\(task)", key: "key-race")) }
            }
            var results: [(job: Job, created: Bool)] = []
            for try await result in group { results.append(result) }
            return results
        }
        #expect(racing.filter(\.created).count == 1, "exactly one concurrent submit creates the job")
        #expect(Set(racing.map(\.job.id)).count == 1, "every concurrent submit returns the same job")
        #expect(try await h.store.jobs(status: nil, limit: 100).count == 5)
    }
}
