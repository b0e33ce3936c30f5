import Foundation
import MediaTestKit
import Testing

/// The limits as an operator sets them: flags, `JOBCTL_MAX_*`, and what a bad value says.
@Suite("Limit options", .timeLimit(.minutes(3)))
struct LimitOptionsTests {
    @Test func flagsAndEnvironmentSetTheLimits() async throws {
        let input = try await Fixtures.shared.path(.basic)
        try await withTemporaryDirectory("limit-flags") { directory in
            let output = directory.file("out.mp4")
            let size = try await Jobctl.run([
                "export", input, "--preset", "low", "-o", output, "--max-output-size", "20K",
            ])
            #expect(
                size.status == 1
                    && size.stderr.hasPrefix("error: limit_exceeded: \(output) would be larger than 20480 bytes"),
                "\(size.stderr)"
            )
            let pixels = try await Jobctl.run(
                ["export", input, "--preset", "low", "-o", output],
                environment: ["JOBCTL_MAX_PIXELS": "100x100"]
            )
            #expect(
                pixels.status == 1 && pixels.stderr.contains("limit_exceeded")
                    && pixels.stderr.contains("over the limit of 10000 pixels"),
                "\(pixels.stderr)"
            )
            let duration = try await Jobctl.run(
                ["export", input, "--preset", "low", "-o", output, "--max-duration", "3s"],
                environment: ["JOBCTL_MAX_DURATION": "1h"]
            )
            #expect(
                duration.status == 1 && duration.stderr.contains("over the limit of 3s"),
                "the flag wins over the environment: \(duration.stderr)"
            )
            #expect(directory.contents().isEmpty, "\(directory.contents())")
            let fine = try await Jobctl.run([
                "export", input, "--preset", "low", "-o", output, "--max-output-size", "10M", "--max-pixels", "76800",
            ])
            #expect(fine.status == 0, "\(fine.stderr)")
        }
    }

    /// `--max-output-size` covers a whole set of files and `--max-duration` the range of every
    /// kind (they once bound exports only: a 153 MB waveform JSON under a 1 MB limit).
    @Test func imageAndWaveformKindsObeyTheLimits() async throws {
        let input = try await Fixtures.shared.path(.basic)
        try await withTemporaryDirectory("limit-kinds") { directory in
            let runs: [(arguments: [String], limit: String)] = [
                (["waveform", input, "-o", directory.file("w/peaks.json"), "--samples-per-pixel", "2"], "100K"),
                (["thumbnails", input, "--count", "40", "--format", "png", "-o", directory.file("t")], "200K"),
                (["storyboard", input, "--tiles", "40", "--format", "png", "-o", directory.file("s")], "50K"),
            ]
            for (arguments, limit) in runs {
                let result = try await Jobctl.run(arguments + ["--max-output-size", limit])
                #expect(result.status == 1, "\(arguments[0]): \(result.stderr)")
                #expect(
                    result.stderr.hasPrefix("error: limit_exceeded: the set of files would be larger than")
                        && result.stderr.contains("--max-output-size"),
                    "\(arguments[0]): \(result.stderr)"
                )
                let long = try await Jobctl.run(arguments + ["--max-duration", "3s"])
                #expect(
                    long.status == 1 && long.stderr.contains("limit_exceeded")
                        && long.stderr.contains("over the limit of 3s"),
                    "\(arguments[0]): \(long.stderr)"
                )
                let inRange = try await Jobctl.run(arguments + ["--max-duration", "3s", "--range", "1s+2s"])
                #expect(inRange.status == 0, "\(arguments[0]) within the limit: \(inRange.stderr)")
            }
            // Nothing of a refused set is left: only what the runs within the limit wrote.
            let leftovers = directory.contents().flatMap { name in
                ((try? FileManager.default.contentsOfDirectory(atPath: directory.file(name))) ?? []).filter {
                    $0.hasSuffix(".tmp")
                }
            }
            #expect(leftovers.isEmpty, "\(leftovers)")
        }
    }

    /// Pictures too large to make are `limit_exceeded` at submit (a local input), not a failed
    /// allocation later: a source whose pixels are 100 times wider than tall, and a waveform
    /// PNG of 16384x16384.
    @Test func impossiblePicturesAreRefusedAtSubmit() async throws {
        let wide = try await Fixtures.shared.path(.extremeSAR)
        let basic = try await Fixtures.shared.path(.basic)
        try await withTemporaryDirectory("limit-pictures") { directory in
            let db = directory.file("jobs.sqlite")
            let thumbs = try await Jobctl.run([
                "submit", wide, "--db", db, "--kind", "thumbnails", "-o", directory.file("t"),
            ])
            #expect(
                thumbs.status == 1 && thumbs.stderr.hasPrefix("error: limit_exceeded: an image of"),
                "\(thumbs.stderr)"
            )
            #expect(thumbs.stderr.contains("32000x240"), "\(thumbs.stderr)")
            let sized = try await Jobctl.run(
                ["submit", wide, "--db", db, "--kind", "thumbnails", "--size", "1280x", "-o", directory.file("t2")]
            )
            #expect(sized.status == 0, "with a size it fits: \(sized.stderr)")
            let png = try await Jobctl.run(
                [
                    "submit", basic, "--db", db, "--kind", "waveform", "--files", "png", "--width", "16384", "--height",
                    "16384",
                ]
                    + ["-o", directory.file("w")]
            )
            #expect(
                png.status == 1 && png.stderr.hasPrefix("error: limit_exceeded: a 16384x16384 picture"),
                "\(png.stderr)"
            )
            let inProcess = try await Jobctl.run(["thumbnails", wide, "-o", directory.file("t3")])
            #expect(inProcess.status == 1 && inProcess.stderr.contains("limit_exceeded"), "\(inProcess.stderr)")
        }
    }

    @Test func badValuesAreUsageErrorsNamingTheirSource() async throws {
        let input = try await Fixtures.shared.path(.basic)
        let environment = try await Jobctl.run(
            ["export", input, "--preset", "low", "-o", "/tmp/x.mp4"],
            environment: ["JOBCTL_MAX_PIXELS": "lots"]
        )
        #expect(
            environment.status == 64 && environment.stderr.contains("JOBCTL_MAX_PIXELS='lots'"),
            "\(environment.stderr)"
        )
        let flag = try await Jobctl.run(["export", input, "--preset", "low", "-o", "/tmp/x.mp4", "--max-tracks", "0"])
        #expect(flag.status == 64 && flag.stderr.contains("--max-tracks"), "\(flag.stderr)")
    }

    @Test func probeHonoursTheTrackLimit() async throws {
        let input = try await Fixtures.shared.path(.manyTracks)
        let refused = try await Jobctl.run(["probe", input])
        #expect(
            refused.status == 1 && refused.stderr.hasPrefix("error: limit_exceeded: ")
                && refused.stderr.contains("more than 64 streams"),
            "\(refused.stderr)"
        )
        let allowed = try await Jobctl.run(["probe", input, "--max-tracks", "70", "--json"])
        let tracks = (try Jobctl.json(allowed) as? [String: Any])?["tracks"] as? [Any]
        #expect(allowed.status == 0 && tracks?.count == 70, "\(allowed.stderr)")
    }
}
