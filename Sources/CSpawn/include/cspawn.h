// posix_spawn for the test helpers, with what Foundation's Process does and Swift cannot reach
// (the _np file actions need _GNU_SOURCE). Foundation's Process.run() on Linux intermittently
// crashes in Swift 6.3.1 (an over-read while it scans /proc/self/fd to close descriptors:
// swiftlang/swift-corelibs-foundation#5472); a test suite that spawns hundreds of processes
// hit it about one run in five.
#ifndef CSPAWN_H
#define CSPAWN_H

#include <sys/types.h>

/// Starts `path` with `argv` and `envp` (NULL-terminated), in `directory` (NULL: here), with
/// `input`, `output` and `error` as its descriptors 0, 1, 2 (-1: /dev/null), every other
/// descriptor closed, and every signal at its default disposition and unblocked. Returns 0 and
/// the pid, or an errno.
int cspawn(const char *path, char *const argv[], char *const envp[], const char *directory,
           int input, int output, int error, pid_t *pid);

/// pipe2(descriptors, O_CLOEXEC): 0, or an errno.
int cspawn_pipe(int descriptors[2]);

#endif
