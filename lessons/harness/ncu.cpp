#include "harness/ncu.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <sstream>

namespace wb {

namespace {

// Splits one CSV line: fields in double quotes (which may hold commas), or bare.
std::vector<std::string> csv_fields(const std::string& line) {
  std::vector<std::string> fields;
  std::string cur;
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        cur += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        cur += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      fields.push_back(cur);
      cur.clear();
    } else if (c != '\r') {
      cur += c;
    }
  }
  fields.push_back(cur);
  return fields;
}

// "170,982,400" or "77.26" -> value; false when it is not a number.
bool number(std::string s, double* v) {
  std::string digits;
  for (char c : s)
    if (c != ',' && c != ' ') digits += c;
  if (digits.empty()) return false;
  char* end = nullptr;
  *v = std::strtod(digits.c_str(), &end);
  return end && *end == 0;
}

}  // namespace

std::string find_ncu() {
  namespace fs = std::filesystem;
  if (const char* path = std::getenv("PATH")) {
    std::stringstream dirs(path);
    for (std::string dir; std::getline(dirs, dir, ':');) {
      if (dir.empty()) continue;
      const fs::path p = fs::path(dir) / "ncu";
      if (access(p.c_str(), X_OK) == 0) return p.string();
    }
  }
  if (access("/usr/local/cuda/bin/ncu", X_OK) == 0) return "/usr/local/cuda/bin/ncu";
  return "";
}

bool parse_ncu_csv(const std::string& text, NcuMetrics* out, std::string* why) {
  *out = NcuMetrics{};
  std::stringstream lines(text);
  int dram_col = -1, hit_col = -1;
  bool units_row_next = false;
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line[0] != '"') continue;  // the program's own output, ncu's ==PROF== lines
    const std::vector<std::string> f = csv_fields(line);
    if (dram_col < 0) {
      for (size_t i = 0; i < f.size(); ++i) {
        if (f[i] == "dram__bytes_read.sum") dram_col = int(i);
        if (f[i] == "lts__t_sector_hit_rate.pct") hit_col = int(i);
      }
      if (dram_col >= 0 || hit_col >= 0) {
        if (dram_col < 0 || hit_col < 0) {
          *why = "ncu's table lacks dram__bytes_read.sum or lts__t_sector_hit_rate.pct";
          return false;
        }
        units_row_next = true;
      }
      continue;
    }
    if (units_row_next) {  // "","","",...,"byte","%"
      units_row_next = false;
      double ignored = 0;
      if (!number(f.size() > size_t(dram_col) ? f[size_t(dram_col)] : "", &ignored)) continue;
    }
    double bytes = 0, hit = 0;
    if (f.size() <= size_t(std::max(dram_col, hit_col)) || !number(f[size_t(dram_col)], &bytes) ||
        !number(f[size_t(hit_col)], &hit)) {
      *why = "ncu printed a kernel row without numbers: " + line.substr(0, 120);
      return false;
    }
    out->kernels += 1;
    out->dram_bytes_read += bytes;
    out->l2_hit_pct.push_back(hit);
  }
  if (out->kernels == 0) {
    *why = dram_col < 0 ? "ncu printed no metrics table (is the GPU's profiling allowed for this user?)"
                        : "ncu profiled no kernel";
    return false;
  }
  return true;
}

std::string format_ncu_metrics(const NcuMetrics& m) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3f GB from DRAM, hit rate ", m.dram_bytes_read / 1e9);
  std::string s = buf;
  for (size_t i = 0; i < m.l2_hit_pct.size(); ++i) {
    std::snprintf(buf, sizeof buf, "%s%.1f%%", i ? " / " : "", m.l2_hit_pct[i]);
    s += buf;
  }
  if (m.kernels > 1) s += " (" + std::to_string(m.kernels) + " kernels)";
  return s;
}

std::string last_line(const std::string& text) {
  const size_t end = text.find_last_not_of("\r\n");
  if (end == std::string::npos) return "";
  const size_t newline = text.find_last_of('\n', end);
  const size_t begin = newline == std::string::npos ? 0 : newline + 1;
  return text.substr(begin, end - begin + 1);
}

int run_capture(const std::vector<std::string>& argv, std::string* output) {
  output->clear();
  if (argv.empty()) return -1;
  int fds[2];
  if (pipe(fds) != 0) return -1;
  const pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return -1;
  }
  if (pid == 0) {
    dup2(fds[1], 1);
    dup2(fds[1], 2);
    close(fds[0]);
    close(fds[1]);
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  close(fds[1]);
  char buf[4096];
  for (ssize_t got; (got = read(fds[0], buf, sizeof buf)) != 0;) {
    if (got < 0) {
      if (errno == EINTR) continue;
      break;
    }
    output->append(buf, size_t(got));
  }
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace wb
