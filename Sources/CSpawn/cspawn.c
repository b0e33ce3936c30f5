#define _GNU_SOURCE
#include "cspawn.h"
#include <fcntl.h>
#include <signal.h>
#include <errno.h>
#include <spawn.h>
#include <unistd.h>

int cspawn(const char *path, char *const argv[], char *const envp[], const char *directory,
           int input, int output, int error, pid_t *pid) {
    posix_spawn_file_actions_t actions;
    posix_spawnattr_t attributes;
    int result = posix_spawn_file_actions_init(&actions);
    if (result != 0) return result;
    result = posix_spawnattr_init(&attributes);
    if (result != 0) {
        posix_spawn_file_actions_destroy(&actions);
        return result;
    }
    int descriptors[3] = {input, output, error};
    for (int target = 0; target < 3 && result == 0; target++) {
        result = descriptors[target] >= 0
            ? posix_spawn_file_actions_adddup2(&actions, descriptors[target], target)
            : posix_spawn_file_actions_addopen(&actions, target, "/dev/null", target == 0 ? O_RDONLY : O_WRONLY, 0);
    }
    if (result == 0) result = posix_spawn_file_actions_addclosefrom_np(&actions, 3);
    if (result == 0 && directory != NULL) result = posix_spawn_file_actions_addchdir_np(&actions, directory);
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    if (result == 0) result = posix_spawnattr_setsigmask(&attributes, &none);
    if (result == 0) result = posix_spawnattr_setsigdefault(&attributes, &all);
    if (result == 0) result = posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    if (result == 0) result = posix_spawn(pid, path, &actions, &attributes, argv, envp);
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attributes);
    return result;
}

int cspawn_pipe(int descriptors[2]) {
    return pipe2(descriptors, O_CLOEXEC) == 0 ? 0 : errno;
}
