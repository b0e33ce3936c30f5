import Foundation
import MediaTestKit
import Testing

/// Outputs that must never be touched (docs/spec.md §4): a device, a FIFO, a directory or a symbolic
/// link at the output path, and the input itself, are refused with `output_forbidden` (exit 1)
/// by `export` and `submit` before any work starts, and left exactly as they were.
@Suite("Output destinations", .timeLimit(.minutes(3)))
struct OutputDestinationTests {
    /// Something at the output path, and what its mode must still be afterwards.
    enum Occupant: String, CaseIterable, Sendable, CustomStringConvertible {
        case characterDevice, fifo, directory, symlinkToFile, danglingSymlink
        var description: String { rawValue }
        /// A device node needs root (mknod); shown as skipped elsewhere.
        static let creatable: [Occupant] = getuid() == 0 ? allCases : allCases.filter { $0 != .characterDevice }
    }

    /// Creates `occupant` at `path`.
    static func make(_ occupant: Occupant, at path: String, beside directory: TemporaryDirectory) -> Bool {
        switch occupant {
        case .characterDevice:
            // A private copy of /dev/null (1, 3): replacing the real one is what this guards against.
            return mknod(path, S_IFCHR | 0o666, makedev(1, 3)) == 0
        case .fifo:
            return mkfifo(path, 0o644) == 0
        case .directory:
            return mkdir(path, 0o755) == 0
        case .symlinkToFile:
            let target = directory.file("target.mp4")
            FileManager.default.createFile(atPath: target, contents: Data("target".utf8))
            return symlink(target, path) == 0
        case .danglingSymlink:
            return symlink(directory.file("nowhere/x.mp4"), path) == 0
        }
    }

    static func mode(_ path: String) -> mode_t? {
        var info = stat()
        return lstat(path, &info) == 0 ? info.st_mode & S_IFMT : nil
    }

    static func makedev(_ major: UInt32, _ minor: UInt32) -> dev_t {
        dev_t((major & 0xfff) << 8 | (minor & 0xff) | ((minor & ~0xff) << 12))
    }

    @Test(arguments: Occupant.creatable)
    func exportRefusesWhatIsNotARegularFile(_ occupant: Occupant) async throws {
        let input = try await Fixtures.shared.path(.basic)
        try await withTemporaryDirectory("dest-\(occupant)") { directory in
            let output = directory.file("out.mp4")
            try #require(Self.make(occupant, at: output, beside: directory), "could not create a \(occupant)")
            let before = Self.mode(output)
            let result = try await Jobctl.run(["export", input, "--preset", "low", "-o", output])
            #expect(result.status == 1, "\(occupant): \(result.stderr)")
            #expect(result.stderr.hasPrefix("error: output_forbidden: \(output) is "), "\(result.stderr)")
            #expect(result.stderr.split(separator: "\n").count == 1, "one line: \(result.stderr)")
            #expect(Self.mode(output) == before, "\(occupant) was replaced")
            // Before any work: the input is not even opened (a missing one is not reported).
            let missing = try await Jobctl.run([
                "export", directory.file("missing.mov"), "--preset", "low", "-o", output,
            ])
            #expect(missing.status == 1 && missing.stderr.hasPrefix("error: output_forbidden: "), "\(missing.stderr)")
            #expect(!directory.contents().contains { $0.hasSuffix(".jobctl.tmp") }, "\(directory.contents())")
            if occupant == .symlinkToFile {
                #expect(try String(contentsOfFile: directory.file("target.mp4"), encoding: .utf8) == "target")
            }
        }
    }

    @Test func exportRefusesTheInputItselfByAnyName() async throws {
        let fixture = try await Fixtures.shared.path(.basic)
        try await withTemporaryDirectory("same-file") { directory in
            let input = directory.file("same.mp4")
            try FileManager.default.copyItem(atPath: fixture, toPath: input)
            let original = try Data(contentsOf: URL(fileURLWithPath: input))
            try FileManager.default.createDirectory(atPath: directory.file("sub"), withIntermediateDirectories: true)
            #expect(link(input, directory.file("hard.mp4")) == 0)
            #expect(symlink(input, directory.file("link.mp4")) == 0)
            // The same path; a `..` detour; a hard link (same inode); the input named through a link.
            let cases: [(input: String, output: String)] = [
                (input, input),
                (input, directory.file("sub/../same.mp4")),
                (input, directory.file("hard.mp4")),
                (directory.file("link.mp4"), input),
            ]
            for (from, to) in cases {
                let result = try await Jobctl.run(["export", from, "--preset", "low", "-o", to], in: directory.path)
                #expect(result.status == 1, "\(from) → \(to): \(result.stderr)")
                #expect(
                    result.stderr.contains("output_forbidden") && result.stderr.contains("is the input itself"),
                    "\(result.stderr)"
                )
                #expect(
                    try Data(contentsOf: URL(fileURLWithPath: input)) == original,
                    "the source was replaced (\(from) → \(to))"
                )
            }
            // Relative names in the working directory too.
            let relative = try await Jobctl.run(
                ["export", "same.mp4", "--preset", "low", "-o", "./same.mp4"],
                in: directory.path
            )
            #expect(relative.status == 1 && relative.stderr.contains("is the input itself"), "\(relative.stderr)")
            #expect(try Data(contentsOf: URL(fileURLWithPath: input)) == original)
        }
    }

    @Test func submitRefusesTheSameDestinationsBeforeQueueing() async throws {
        let fixture = try await Fixtures.shared.path(.basic)
        try await withTemporaryDirectory("submit-dest") { directory in
            let db = directory.file("jobs.sqlite")
            let input = directory.file("in.mp4")
            try FileManager.default.copyItem(atPath: fixture, toPath: input)
            let fifo = directory.file("pipe.mp4")
            #expect(mkfifo(fifo, 0o644) == 0)
            for output in [fifo, input, directory.path] {
                let result = try await Jobctl.run(["submit", input, "--db", db, "--preset", "low", "-o", output])
                #expect(result.status == 1, "\(output): \(result.stderr)")
                #expect(result.stderr.hasPrefix("error: output_forbidden: "), "\(result.stderr)")
            }
            let list = try await Jobctl.run(["list", "--db", db, "--json"])
            #expect((try Jobctl.json(list) as? [Any])?.isEmpty == true, "nothing was queued: \(list.stdoutText)")
            #expect(Self.mode(fifo) == S_IFIFO)
        }
    }
}
