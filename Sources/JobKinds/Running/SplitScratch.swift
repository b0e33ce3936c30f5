import Foundation
import JobctlCore
import ObjectStorage
import Queue

/// Where the parts of split exports wait between their children and the join (`--scratch`):
/// a directory every worker reaches, or an `s3://` prefix (issue 28). On an object store each
/// part is an object, `PREFIX/PARENTID.split/NAME`: a child stages its part in its staging
/// directory and uploads it as it would an output (fenced, resumable); the join downloads the
/// parts into its own staging directory, joins them there, and deletes the objects once the
/// joined file is published. Parts of a parent that fails stay for the prefix's lifecycle rule
/// (docs/operations.md).
struct SplitScratch: Sendable {
    /// The local directory where a parent's parts are read and written: in the shared scratch
    /// directory, or, with an `s3://` scratch, in this worker's staging directory.
    let directory: String
    /// The `s3://` prefix of a parent's parts (`nil`: the scratch is a directory).
    let remote: S3Location?

    init(parent: JobID, context: RunContext) throws(JobError) {
        let scratch = context.scratchDirectory
        guard MediaLocation.isObjectStore(scratch) else {
            directory = SplitJob.directory(of: parent, scratch: scratch)
            remote = nil
            return
        }
        guard case .success(let prefix) = S3Location.parse(scratch) else {
            throw JobError(
                code: .internalError,
                message: "the scratch \(scratch) is not an s3://BUCKET/PREFIX/ location"
            )
        }
        directory = SplitJob.directory(of: parent, scratch: context.stagingDirectory)
        remote = prefix.object(named: "\(parent).split/")
    }

    /// A part's local file.
    func path(of name: String) -> String { (directory as NSString).appendingPathComponent(name) }

    /// Where child `child` writes its part before the upload, with an `s3://` scratch: a
    /// directory of its own in the worker's staging directory (`PARENTID.split.CHILDID/`),
    /// removed once the part is published, so that no other child's part, made at the same
    /// time on the same worker, shares it (`nil`: a scratch directory, written in place). A
    /// worker killed before removing it leaves it to the staging sweep (its name starts with
    /// the parent's id).
    func staging(of child: JobID, context: RunContext) -> String? {
        guard remote != nil else { return nil }
        let name = (directory as NSString).lastPathComponent
        return (context.stagingDirectory as NSString).appendingPathComponent("\(name).\(child)")
    }

    /// A part's object (`nil`: the scratch is a directory).
    func object(of name: String) -> S3Location? { remote.map { $0.object(named: name) } }

    /// The local directory, made if missing.
    func makeDirectory() throws(JobError) { try Self.makeDirectory(directory) }

    /// `directory` made if missing.
    static func makeDirectory(_ directory: String) throws(JobError) {
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        } catch {
            throw JobError(
                code: .outputUnwritable,
                message: "the scratch directory \(directory) cannot be created: \(error.localizedDescription)",
                retryable: true
            )
        }
    }

    /// The join's side: every part named in `names` downloaded from the object store into the
    /// local directory (nothing to do for a scratch directory), at most four at once. Returns
    /// the names the store does not have (deleted, expired by a lifecycle rule).
    func download(
        _ names: [String],
        context: RunContext,
        isCancelled: @escaping @Sendable () -> Bool
    ) async throws -> Set<String> {
        guard remote != nil else { return [] }
        try makeDirectory()
        let client: S3Client
        do {
            client = try context.objectStore.client()
        } catch {
            throw ObjectStoreMedia.jobError(error, reading: true)
        }
        return try await withThrowingTaskGroup(of: String?.self) { group in
            var pending = names[...]
            var missing: Set<String> = []
            func add() {
                guard let name = pending.popFirst(), let object = object(of: name) else { return }
                let path = path(of: name)
                group.addTask {
                    try await onDedicatedThread("jobctl.s3") { () throws -> String? in
                        do throws(S3Error) {
                            try client.download(object, to: path, shouldAbort: isCancelled)
                            return nil
                        } catch {
                            try? FileManager.default.removeItem(atPath: path)
                            if error.code == .notFound { return name }
                            var failure = ObjectStoreMedia.jobError(error, reading: true)
                            failure.message =
                                "a part of the split export could not be read from the scratch: \(error.message)"
                            throw failure
                        }
                    }
                }
            }
            for _ in 0..<4 { add() }
            while let result = try await group.next() {
                if let result { missing.insert(result) }
                add()
            }
            return missing
        }
    }

    /// Deletes the parts' objects (after the joined file is published): best effort, a part
    /// left behind is the lifecycle rule's.
    func removeObjects(_ names: [String], context: RunContext) {
        guard remote != nil, let client = try? context.objectStore.client() else { return }
        for name in names {
            if let object = object(of: name) { try? client.deleteObject(object) }
        }
    }
}
