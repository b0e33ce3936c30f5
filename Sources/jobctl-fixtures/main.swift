import Foundation
import MediaTestKit

// Generates every test fixture into the shared cache before the test run (`make test`), so no
// test's time limit pays for ffmpeg encoding them on a busy machine. Two at a time: two cores.
// Tests still generate a missing fixture themselves when run without this step.
let started = ContinuousClock.now
let fixtures = Fixture.allCases
do {
    try await withThrowingTaskGroup(of: Void.self) { group in
        var next = fixtures.makeIterator()
        for _ in 0..<2 {
            guard let fixture = next.next() else { break }
            group.addTask { _ = try await Fixtures.shared.path(fixture) }
        }
        while try await group.next() != nil {
            guard let fixture = next.next() else { continue }
            group.addTask { _ = try await Fixtures.shared.path(fixture) }
        }
    }
    print("\(fixtures.count) test fixtures ready in \(Fixtures.directory) (\(ContinuousClock.now - started))")
} catch {
    FileHandle.standardError.write(Data("error: internal: generating the test fixtures failed: \(error)\n".utf8))
    exit(1)
}
