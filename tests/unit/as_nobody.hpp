// Runs a function as another user: tests of permission rules run as root here, and root ignores permission bits.
#pragma once

#include <grp.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <exception>
#include <functional>

namespace dgt::test {

/// Runs `fn` in a child process as user nobody (uid and gid 65534) when this process is root, else as this user;
/// its return value is the exit code (97: it threw, 99: the user could not be changed, 200: killed by a signal).
inline int as_nobody(const std::function<int()>& fn) {
  const pid_t pid = fork();
  if (pid == 0) {
    if (geteuid() == 0 && (setgroups(0, nullptr) != 0 || setgid(65534) != 0 || setuid(65534) != 0)) _exit(99);
    int rc = 98;
    try {
      rc = fn();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "child: %s\n", e.what());
      rc = 97;
    }
    _exit(rc);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 200;
}

}  // namespace dgt::test
