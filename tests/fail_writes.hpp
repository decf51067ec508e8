// Making a write fail the way a full disk does: in a forked child whose
// largest file is `limit_bytes` (RLIMIT_FSIZE, which binds root too), so that
// writing past it fails with EFBIG instead of killing the process (SIGXFSZ
// ignored). For the tests that show a failed write leaves no partial file and
// the file it would have replaced untouched.
#pragma once

#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <functional>

namespace wb::testing {

// Runs `write` in a child limited to files of `limit_bytes`; returns the
// child's exit status: 0 when `write` returned true (it reports failure by
// returning false), 1 when it returned false, -1 when the child did not exit.
inline int run_with_file_size_limit(long limit_bytes, const std::function<bool()>& write) {
  const pid_t pid = fork();
  if (pid == 0) {
    signal(SIGXFSZ, SIG_IGN);
    rlimit limit{rlim_t(limit_bytes), rlim_t(limit_bytes)};
    setrlimit(RLIMIT_FSIZE, &limit);
    _exit(write() ? 0 : 1);
  }
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return -1;
  return WEXITSTATUS(status);
}

}  // namespace wb::testing
