import Foundation
import Logging
import Queue

/// Removes what dead workers left in the staging directory.
///
/// A worker killed mid-export or mid-upload (SIGKILL, a lost host, the OOM killer) leaves
/// `JOBID.EXT` or `.JOBID.EXT.JOBID-ATTEMPT-TOKEN.jobctl.tmp` behind (a set of files, such as
/// thumbnails: `.NAME.JOBID-ATTEMPT-TOKEN.jobctl.tmp`). The job's next attempt removes
/// them if it runs on the same host, but in a fleet it usually runs elsewhere. So every worker
/// sweeps its staging directory when it starts and every hour: a file is removed when its job
/// has ended (or no longer exists) and nothing has written to it for `minimumAge`. Files of
/// queued or running jobs, and files that are not a job's, are left alone.
struct StagingSweep {
    let directory: String
    let store: any JobQueueDriver
    var minimumAge: Duration = .seconds(600)
    let logger: Logger

    /// The job a staging file belongs to, from its name; `nil` for anything else.
    static func jobID(ofStagingFile name: String) -> JobID? {
        if name.hasPrefix("."), name.hasSuffix(".jobctl.tmp"),
            let tag = name.dropLast(".jobctl.tmp".count).split(separator: ".").last, tag.count > 37,
            tag.dropFirst(36).first == "-", UUID(uuidString: String(tag.prefix(36))) != nil
        {
            return JobID(String(tag.prefix(36)))
        }
        let bare = name.hasPrefix(".") ? name.dropFirst() : Substring(name)
        let candidate = String(bare.prefix(36))
        guard candidate.count == 36, bare.dropFirst(36).first == ".", UUID(uuidString: candidate) != nil else {
            return nil
        }
        return JobID(candidate)
    }

    /// Removes the files of ended jobs; returns their names.
    @discardableResult
    func run(now: Date = Date()) async -> [String] {
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return [] }
        var removed: [String] = []
        var ended: [JobID: Bool] = [:]
        for entry in entries.sorted() {
            guard let id = Self.jobID(ofStagingFile: entry) else { continue }
            let path = (directory as NSString).appendingPathComponent(entry)
            guard isOld(path, now: now) else { continue }
            if ended[id] == nil {
                do {
                    ended[id] = try await store.job(id).map { $0.status.isTerminal } ?? true
                } catch {
                    logger.warning(
                        "Sweeping the staging directory stopped: the job database did not answer",
                        metadata: ["error": "\(error)"]
                    )
                    break
                }
            }
            // Checked again just before removing: a retried job may have started writing.
            guard ended[id] == true, isOld(path, now: now) else { continue }
            do {
                try FileManager.default.removeItem(atPath: path)
                removed.append(entry)
            } catch {
                logger.warning(
                    "A leftover staging file could not be removed",
                    metadata: ["file": "\(path)", "error": "\(error)"]
                )
            }
        }
        if !removed.isEmpty {
            logger.info(
                "Removed leftover staging files of ended jobs",
                metadata: ["files": "\(removed.count)", "directory": "\(directory)"]
            )
        }
        return removed
    }

    private func isOld(_ path: String, now: Date) -> Bool {
        guard let modified = (try? FileManager.default.attributesOfItem(atPath: path))?[.modificationDate] as? Date
        else { return false }
        return now.timeIntervalSince(modified) >= Double(minimumAge.components.seconds)
    }
}
