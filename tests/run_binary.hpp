// Runs one of the workbook's binaries from the build's bin folder, the way a
// user would, and captures what it printed. For the CLI and GPU tests.
#pragma once

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

namespace wb::testing {

struct Ran {
  int code;         // exit status (-1: did not exit normally)
  std::string out;  // stdout and stderr together
};

// `args` is the binary's name followed by its arguments, e.g. "workbook list".
inline Ran run_binary(const std::string& args) {
  const std::string cmd = std::string(WORKBOOK_BIN_DIR) + "/" + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return {-1, "popen failed"};
  std::string out;
  std::array<char, 4096> buf{};
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
  const int status = pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

}  // namespace wb::testing
