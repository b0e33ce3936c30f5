import Foundation
import MediaTestKit
import Testing

/// `export` under SIGHUP and SIGINT, what a killed export leaves, and file names that are not
/// UTF-8.
@Suite("Signals and odd names", .timeLimit(.minutes(3)))
struct SignalAndNameTests {
    @Test(arguments: [SIGHUP, SIGINT, SIGTERM])
    func aSignalledExportCleansUp(_ number: Int32) async throws {
        let input = try await Fixtures.shared.path(.long)
        try await withTemporaryDirectory("signal-export") { directory in
            let output = directory.file("x.mp4")
            let export = try JobctlProcess(
                ["export", input, "--preset", "highest", "-o", output],
                log: directory.file("stderr")
            )
            #expect(
                try await eventually(within: .seconds(60)) {
                    directory.contents().contains { $0.hasSuffix(".jobctl.tmp") }
                }
            )
            export.signal(number)
            let exit = try #require(try await export.waitForExit(timeout: .seconds(20)))
            #expect(exit.status == 130, "signal \(number): \(export.log)")
            #expect(export.log.hasPrefix("error: cancelled: "), "\(export.log)")
            #expect(directory.contents() == ["stderr"], "left: \(directory.contents())")
        }
    }

    /// A signal that comes while a command's handlers are being put in place is not lost.
    /// libdispatch registers a signal source later, on its own thread: on a loaded machine an
    /// export had made its temporary file before then, and a SIGHUP there was ignored (the
    /// export ran on). The `signal-handlers` failpoint stops the process at exactly that point;
    /// the signal must end it at once, leaving nothing behind.
    @Test(arguments: ["export", "thumbnails", "storyboard", "waveform", "hls"])
    func aSignalWhileTheHandlersAreSetUpIsNotLost(_ command: String) async throws {
        let input = try await Fixtures.shared.path(.long)
        try await withTemporaryDirectory("signal-early-\(command)") { directory in
            let output = directory.file(command == "export" ? "x.mp4" : "out")
            let process = try JobctlProcess(
                [command, input, "-o", output] + (command == "export" ? ["--preset", "highest"] : []),
                log: directory.file("stderr"),
                environment: ["JOBCTL_FAILPOINTS": "signal-handlers"]
            )
            try #require(
                try await eventually(within: .seconds(60)) { process.isStopped },
                "\(command) never reached its failpoint: \(process.log)"
            )
            process.signal(SIGHUP)
            process.signal(SIGCONT)
            let exit = try #require(try await process.waitForExit(timeout: .seconds(20)), "\(command): \(process.log)")
            #expect([128 + SIGHUP, 130].contains(exit.status), "\(command) ran on after SIGHUP: \(process.log)")
            #expect(directory.contents() == ["stderr"], "\(command) left: \(directory.contents())")
        }
    }

    /// A SIGKILLed export's temporary file names its process: the next export to the same
    /// place removes it once that process is gone (and it is 10 minutes old), and leaves a live
    /// one's alone.
    @Test func aDeadExportsLeftoverIsRemovedByTheNext() async throws {
        let input = try await Fixtures.shared.path(.basic)
        try await withTemporaryDirectory("export-leftover") { directory in
            let output = directory.file("x.mp4")
            let dead = directory.file(".x.mp4.export-4194999-abc.jobctl.tmp")  // above Linux's pid_max
            let live = directory.file(".x.mp4.export-\(getpid())-def.jobctl.tmp")
            let recent = directory.file(".x.mp4.export-4194998-ghi.jobctl.tmp")
            for path in [dead, live, recent] {
                FileManager.default.createFile(atPath: path, contents: Data("partial".utf8))
            }
            let old = Date(timeIntervalSinceNow: -3600)
            for path in [dead, live] {
                try FileManager.default.setAttributes([.modificationDate: old], ofItemAtPath: path)
            }
            let result = try await Jobctl.run(["export", input, "--preset", "low", "--range", "0+1s", "-o", output])
            #expect(result.status == 0, "\(result.stderr)")
            #expect(
                Set(directory.contents()) == [
                    "x.mp4", (live as NSString).lastPathComponent, (recent as NSString).lastPathComponent,
                ]
            )
        }
    }

    /// Swift turns the bytes of a name that is not UTF-8 into U+FFFD, naming a file that does
    /// not exist; jobctl says what is wrong instead.
    @Test func aFileNameThatIsNotUTF8IsRefusedWithAReason() async throws {
        let input = try await Fixtures.shared.path(.basic)
        try await withTemporaryDirectory("not-utf8") { directory in
            let script =
                #"cp "$1" "$2/$(printf 'n\377\376o.mp4')" && cd "$2" && exec "$0" export "$(printf 'n\377\376o.mp4')" --preset low -o out.mp4"#
            let result = try await ProcessRunner.run("/bin/sh", ["-c", script, Jobctl.path, input, directory.path])
            #expect(result.status == 64, "\(result.stderr)")
            #expect(
                result.stderr
                    == "error: usage: argument 2 ('n\\xff\\xfeo.mp4') is not valid UTF-8: jobctl takes file names and URLs as UTF-8 text; rename the file (e.g. with convmv)\n",
                "\(result.stderr)"
            )
        }
    }
}
