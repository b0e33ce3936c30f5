import ArgumentParser
import CommandLineSupport
import Foundation
import JobKinds
import JobctlCore
import Media
import SafeHTTP

/// How `jobctl thumbnails`, `storyboard`, `waveform` and `hls` take their options: their flags
/// make the request `jobctl submit --kind` queues (`ThumbnailArguments.request`…), the kind
/// checks it into its options (`options(from:)`, as for the API and a worker), and the command
/// runs the kind's work on them. Every default, limit and refusal is the kind's, worded with
/// the command line's flags, so a command and a queued job cannot disagree (issue 43).
extension JobKindDefinition {
    /// `request` checked by the kind, as `submit` checks it (`catalog`: the presets file's
    /// ladders, for `hls`). A refusal exits with its code's status (`error: limit_exceeded: …`,
    /// exit 1; `error: invalid_request: …`, exit 64), as the same refusal from the media work did.
    static func inProcessOptions(
        _ request: Request,
        format: String? = nil,
        catalog: PresetCatalog? = nil
    ) throws -> Options {
        do throws(SubmissionError) {
            return try options(from: request, format: format, rules: commandLineRules(catalog: catalog))
        } catch {
            // Its code's exit status: 64 for `invalid_request`, 1 for `limit_exceeded`.
            throw CommandFailure.failed(code: error.code, error.message)
        }
    }

    /// For a group of flags' `validate()`: the kind's refusal of them as a usage error, worded
    /// with the flag (`--samples-per-pixel is between 2 and 16777216`). A refusal that is not
    /// about what was typed (`limit_exceeded`: a picture too large) is left to the command's
    /// run, which reports it with its own code.
    static func validating(_ request: Request, format: String? = nil) throws {
        do throws(SubmissionError) {
            _ = try options(from: request, format: format, rules: commandLineRules(catalog: nil))
        } catch  where !error.foundInMedia {
            throw ValidationError(error.message)
        } catch {}
    }

    /// The command line's rules: fields named as flags, paths on this host, the presets of
    /// `catalog` (the built-in ones without it).
    private static func commandLineRules(catalog: PresetCatalog?) -> SubmissionRules {
        SubmissionRules(
            place: .host(currentDirectory: FileManager.default.currentDirectoryPath),
            catalog: catalog ?? .builtIn,
            addressPolicy: AddressPolicy(),
            naming: .flags
        )
    }
}
