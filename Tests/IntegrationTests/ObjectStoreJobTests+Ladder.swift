import Foundation
import JobctlCore
import MediaTestKit
import ObjectStorage
import Queue
import Testing

/// A ladder (issue 29) published under an object-store prefix.
extension ObjectStoreJobTests {
    @Test(
        "an hls ladder to an s3:// key template: every file, master.m3u8 last, with streaming content types; it decodes"
    )
    func ladderToBucket() async throws {
        let setup = try await Setup("s3-ladder")
        defer { setup.directory.remove() }
        let input = try await setup.uploadInput()
        let template = "s3://\(ObjectStoreJobTests.bucket)/\(setup.prefix)/hls/{name}"
        let result = try await Jobctl.run(
            ["submit", input, "--db", setup.db, "--kind", "hls", "--ladder", "234p", "-o", template]
        )
        try #require(result.status == 0, "submit failed: \(result.stderr)")
        let id = JobID(result.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines))
        _ = try await setup.runWorker()
        let job = try await setup.job(id)
        #expect(job.status == .completed, "\(job.error?.message ?? "")")
        let listed = job.result?["files"]?.arrayValue?.compactMap { $0["name"]?.stringValue } ?? []
        #expect(listed.last == "master.m3u8", "the master playlist is not written last: \(listed)")
        let (client, prefix) = (setup.client, setup.prefix)
        let objects = try await onThread {
            try client.listObjects(bucket: ObjectStoreJobTests.bucket, prefix: "\(prefix)/hls/")
        }
        let names = objects.map { String($0.key.dropFirst("\(prefix)/hls/".count)) }
        #expect(Set(names) == Set(listed) && names.contains("234p-00001.m4s"), "\(names) against \(listed)")
        for (name, type) in [
            ("master.m3u8", "application/vnd.apple.mpegurl"), ("manifest.mpd", "application/dash+xml"),
            ("234p-00001.m4s", "video/iso.segment"), ("234p-init.mp4", "video/mp4"),
        ] {
            let location = setup.location("hls/\(name)")
            let info = try await onThread { try client.head(location) }
            #expect(info?.contentType == type, "\(name): \(String(describing: info?.contentType))")
        }
        // Fetched back with curl's own signature, the ladder decodes through its master playlist.
        let local = setup.directory.file("hls")
        try FileManager.default.createDirectory(atPath: local, withIntermediateDirectories: true)
        for name in names { _ = try await setup.download(setup.location("hls/\(name)"), to: "hls/\(name)") }
        let decoded = try await ProcessRunner.run(
            "ffmpeg",
            ["-v", "error", "-xerror", "-i", "\(local)/master.m3u8", "-f", "null", "-"]
        )
        #expect(decoded.status == 0 && decoded.stderr.isEmpty, "\(decoded.stderr)")
    }
}
