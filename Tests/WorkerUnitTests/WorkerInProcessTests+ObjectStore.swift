import Foundation
import Media
import MediaTestKit
import ObjectStorage
import Queue
import Synchronization
import Testing
import Worker

/// The worker's object store client is the one its configuration gives (`WorkerOptions.objectStore`),
/// for writing outputs and for reading inputs, whatever this process's environment says (run
/// under scripts/test-s3.sh, the environment names a working store).
extension WorkerInProcessTests {
    /// A provider whose store refuses every request, counting how often it was asked.
    final class RefusingStore: Sendable {
        let asked = Mutex(0)
        var provider: S3ClientProvider {
            S3ClientProvider { () throws(S3Error) in
                self.asked.withLock { $0 += 1 }
                throw S3Error(
                    .denied,
                    "the configured store refuses (InvalidAccessKeyId)",
                    storeCode: "InvalidAccessKeyId"
                )
            }
        }
    }

    @Test("an s3:// output is written with the configured store's client: its refusal fails the job")
    func injectedStoreWrites() async throws {
        let bench = try Bench("s3-output")
        defer { bench.directory.remove() }
        let store = RefusingStore()
        let preset = try PresetCatalog.builtIn.preset(named: "low")
        let job = try await bench.store.submit(
            JobRequest(
                input: try await Fixtures.shared.path(.basic),
                output: "s3://jobctl-test/injected/out.mp4",
                preset: "low",
                presetSettings: try JSONValue(encoding: preset),
                format: "mp4",
                range: Job.Range(start: 0, duration: 0.5)
            )
        ).job
        try await bench.worker(once: true, objectStore: store.provider).run()

        let failed = try await bench.job(job.id)
        #expect(failed.status == .failed)
        #expect(failed.error?.code == .outputUnwritable && failed.error?.retryable == false)
        #expect(failed.error?.message.contains("InvalidAccessKeyId") == true, "\(failed.error?.message ?? "")")
        #expect(store.asked.withLock { $0 } >= 1)
        let staged = (try? FileManager.default.contentsOfDirectory(atPath: bench.directory.file("staging"))) ?? []
        #expect(staged.isEmpty, "the staged output is discarded: \(staged)")
    }

    @Test("an s3:// input is read with the configured store's client: its refusal fails the job")
    func injectedStoreReads() async throws {
        let bench = try Bench("s3-input")
        defer { bench.directory.remove() }
        let store = RefusingStore()
        let job = try await bench.submit("s3://jobctl-test/injected/in.mov")
        try await bench.worker(once: true, objectStore: store.provider).run()

        let failed = try await bench.job(job.id)
        #expect(failed.status == .failed)
        #expect(failed.error?.code == .inputUnreadable, "\(String(describing: failed.error))")
        #expect(failed.error?.message.contains("InvalidAccessKeyId") == true, "\(failed.error?.message ?? "")")
        #expect(store.asked.withLock { $0 } == 1)
        #expect(bench.outputs() == [])
    }
}
