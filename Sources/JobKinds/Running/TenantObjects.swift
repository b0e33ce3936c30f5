import Foundation
import JobctlCore
import ObjectStorage

/// `s3://` locations of an API key's jobs (issue 28): the workers' credentials reach every
/// bucket they may, so a key's jobs get only the prefix the operator gave it, `ROOT/KEYID/`
/// under `--s3-root` (`jobctl serve` checks at submit, every worker again before it reads or
/// writes). The location is named whole (`s3://media/tenants/KEYID/in/talk.mov`) and shown as
/// given. A key has no `s3://` at all when the operator gave no root.
package enum TenantObjects {
    /// The key's own prefix: `ROOT/KEYID/`.
    package static func prefix(root: String, owner: String) -> String {
        (root.hasSuffix("/") ? root : root + "/") + owner + "/"
    }

    /// Why `location` is not one of `owner`'s, or `nil` when it is. `location` may be a key
    /// template (`{name}`).
    package static func problem(_ location: String, root: String?, owner: String) -> String? {
        guard let root else {
            return
                "s3:// locations of an API key's jobs need the operator's --s3-root (the workers' credentials would reach any bucket); send an http(s) URL"
        }
        guard TenantPath.isDirectoryName(owner) else { return "this key cannot have s3:// locations" }
        if let problem = S3Location.problem(with: location.replacingOccurrences(of: "{name}", with: "name")) {
            return problem
        }
        let prefix = prefix(root: root, owner: owner)
        // Keys have no `.` or `..` segments (refused above): a prefix of the bytes is a prefix
        // of the place (compared as bytes: String comparison would take a Kelvin sign for a K).
        guard location.utf8.starts(with: prefix.utf8), location.utf8.count > prefix.utf8.count else {
            return "this key's s3:// locations are under \(prefix)"
        }
        return nil
    }

    /// Why `root` cannot be a `--s3-root`, or `nil`: it is `s3://BUCKET/PREFIX/`.
    package static func rootProblem(_ root: String) -> String? {
        guard MediaLocation.isObjectStore(root) else { return "--s3-root is an s3://BUCKET/PREFIX/ location" }
        guard !root.contains("{name}") else { return "--s3-root is a prefix, not a key template" }
        return S3Location.problem(with: prefix(root: root, owner: "key")).map { "--s3-root: \($0)" }
    }

    /// `--s3-root`, else `JOBCTL_S3_ROOT`.
    package static func root(_ option: String?) -> String? {
        option ?? ProcessInfo.processInfo.environment["JOBCTL_S3_ROOT"].flatMap { $0.isEmpty ? nil : $0 }
    }
}
