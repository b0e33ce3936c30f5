import ArgumentParser
import Foundation
import JobKinds

/// `--s3-root` of `serve` and `worker`: the object store prefix under which each API key may
/// use `ROOT/KEYID/` (`TenantObjects`). Both must be given the same.
struct ObjectRootOption: ParsableArguments {
    @Option(
        name: .customLong("s3-root"),
        help: ArgumentHelp(
            "Let API keys' jobs use s3:// locations under ROOT/KEYID/, named whole (jobctl serve and every worker need the same root; without one, keys get no s3:// at all: the workers' credentials would reach any bucket). Env: JOBCTL_S3_ROOT.",
            valueName: "s3://bucket/prefix/"
        )
    )
    var objectRoot: String?

    /// The option, else `JOBCTL_S3_ROOT`.
    var root: String? { TenantObjects.root(objectRoot) }

    func validate() throws {
        if let root, let problem = TenantObjects.rootProblem(root) { throw ValidationError(problem) }
    }
}
