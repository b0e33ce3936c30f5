import JobctlCore
import Testing

/// A path's directory part, written out by hand because Foundation's traps on a one-letter name.
@Suite("Path text")
struct PathTextTests {
    @Test(
        "the directory part: a bare name, one letter, the root, trailing and doubled slashes",
        arguments: [
            ("a", "", "."), ("n", "", "."), ("name.mp4", "", "."), ("a/b", "a", "a"), ("/a", "/", "/"),
            ("/", "/", "/"), ("a/b/", "a", "a"), ("/x//y", "/x", "/x"), ("//a", "/", "/"), ("dir/a", "dir", "dir"),
        ]
    )
    func parent(path: String, parent: String, directory: String) {
        #expect(PathText.parent(of: path) == parent)
        #expect(PathText.directory(of: path) == directory)
    }
}
