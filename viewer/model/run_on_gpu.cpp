#include "model/run_on_gpu.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace wb::viewer {

namespace fs = std::filesystem;

std::string executable_dir() {
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string() : self.parent_path().string();
}

std::vector<std::string> available_lessons(const std::string& bin_dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (fs::directory_iterator it(bin_dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind("lesson", 0) == 0 && it->is_regular_file(ec) && ::access(it->path().c_str(), X_OK) == 0)
      out.push_back(name);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string why_cannot_run(const GpuRunRequest& request) {
  if (request.lesson.empty()) return "no lesson chosen";
  if (request.variant.empty()) return "no variant chosen";
  if (request.m < 1 || request.n < 1 || request.k < 1) return "M, N and K must be at least 1";
  const fs::path binary = fs::path(request.bin_dir) / request.lesson;
  if (::access(binary.c_str(), X_OK) != 0)
    return request.lesson + " is not built here (the lessons are built only with CUDA)";
  return {};
}

std::vector<std::string> gpu_run_command(const GpuRunRequest& request, const std::string& trace_path) {
  return {(fs::path(request.bin_dir) / request.lesson).string(),
          "--variant", request.variant,
          "--m", std::to_string(request.m),
          "--n", std::to_string(request.n),
          "--k", std::to_string(request.k),
          "--trace", trace_path,
          "--reps", std::to_string(request.reps)};
}

namespace {

std::string last_line_of(const std::string& path) {
  std::ifstream f(path);
  std::string line, last;
  while (std::getline(f, line))
    if (!line.empty()) last = line;
  return last;
}

}  // namespace

std::optional<Trace> run_on_gpu(const GpuRunRequest& request, std::string* error) {
  auto fail = [&](const std::string& why) -> std::optional<Trace> {
    if (error) *error = why;
    return std::nullopt;
  };
  if (std::string why = why_cannot_run(request); !why.empty()) return fail(why);

  const fs::path tmp = fs::temp_directory_path();
  const std::string stem = (tmp / ("tile-viewer-run-" + std::to_string(::getpid()))).string();
  const std::string trace_path = stem + ".trace.json";
  const std::string log_path = stem + ".log";
  const std::vector<std::string> args = gpu_run_command(request, trace_path);
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);

  // The lesson's output goes to a log so its last line can explain a failure.
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  pid_t child = 0;
  const int spawn_error = posix_spawn(&child, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawn_error != 0) return fail("cannot start " + args[0] + ": " + std::strerror(spawn_error));

  int status = 0;
  while (::waitpid(child, &status, 0) < 0) {
    if (errno != EINTR) return fail(std::string("waiting for the lesson failed: ") + std::strerror(errno));
  }
  const std::string last = last_line_of(log_path);
  std::remove(log_path.c_str());
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::remove(trace_path.c_str());
    const std::string how = WIFEXITED(status) ? "exited with " + std::to_string(WEXITSTATUS(status))
                                              : "was killed by signal " + std::to_string(WTERMSIG(status));
    return fail(request.lesson + " " + how + (last.empty() ? "" : ": " + last));
  }
  try {
    Trace t = read_trace(trace_path);
    std::remove(trace_path.c_str());
    return t;
  } catch (const RecordError& e) {
    std::remove(trace_path.c_str());
    return fail(e.what());
  }
}

}  // namespace wb::viewer
