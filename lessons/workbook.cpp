// workbook: the main job. Host only, so it exists in every build.
//
//   workbook                 run the lessons in order (or, with no GPU / no CUDA
//                            build, show each lesson's explanation and the results
//                            recorded on a real GPU)
//   workbook list [--ids]    the lessons, whether this build has them, what is recorded
//   workbook compare --m M --n N --k K [--json PATH] [--reps R] [--rounds R] [--device D]
//                            every variant of every lesson on one shape, ranked: one table
//                            per reference (the plain product's lessons share cuBLAS's)
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>


#include "harness/catalog.hpp"
#include "harness/options.hpp"
#include "harness/report.hpp"
#include "records/records.hpp"

extern char** environ;

namespace {

namespace fs = std::filesystem;
using namespace wb;

constexpr const char* kUsage =
    "usage: workbook                 run the lessons in order\n"
    "       workbook list [--ids]    list the lessons (--ids: their ids alone, one per line)\n"
    "       workbook compare [--m M] [--n N] [--k K] [--json PATH] [--reps R] [--rounds R] [--seed S] [--device D]\n"
    "                                every variant of every lesson on one shape, ranked against\n"
    "                                its reference: one table per reference\n";

fs::path bin_dir() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::current_path() : exe.parent_path();
}

fs::path lesson_binary(const LessonInfo& l) { return bin_dir() / l.id; }

bool built_here(const LessonInfo& l) {
  std::error_code ec;
  return fs::is_regular_file(lesson_binary(l), ec);
}

// Runs a program with arguments, no shell. quiet: its standard output goes to /dev/null.
int run_program(const std::vector<std::string>& args, bool quiet) {
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (quiet) posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  std::fflush(stdout);
  pid_t pid = 0;
  const int err = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (err != 0) {
    std::fprintf(stderr, "workbook: cannot run %s: %s\n", argv[0], std::strerror(err));
    return kExitFailed;
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  std::fprintf(stderr, "workbook: %s stopped by signal %d\n", argv[0], WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  return kExitFailed;
}

int cmd_list(bool ids_only) {
  if (ids_only) {
    for (const LessonInfo& l : lesson_catalog()) std::printf("%s\n", l.id.c_str());
    return kExitOk;
  }
  for (const LessonInfo& l : lesson_catalog()) {
    const auto recorded = recorded_results_files(assets_dir(), l.id);
    std::printf("%s  %-18s %-76s %s, %zu recorded\n", l.number.c_str(), l.id.c_str(), l.title.c_str(),
                built_here(l) ? "built" : "not built", recorded.size());
  }
  return kExitOk;
}

int cmd_run_all() {
  int worst = kExitOk;
  const auto& lessons = lesson_catalog();
  for (size_t i = 0; i < lessons.size(); ++i) {
    const LessonInfo& l = lessons[i];
    std::printf("\n==================== %zu/%zu  %s ====================\n", i + 1, lessons.size(), l.id.c_str());
    if (!built_here(l)) {
      std::printf("%s\n", lesson_explanation(l).c_str());
      std::printf("%s is not in this build (%s). Results recorded on a real GPU:\n\n%s", l.id.c_str(),
                  WORKBOOK_HAVE_CUDA ? "its sources are not there yet" : "host-only build: no CUDA compiler",
                  format_recorded_results(assets_dir(), l.id).c_str());
      continue;
    }
    const int rc = run_program({lesson_binary(l).string()}, false);
    if (rc != kExitOk) {
      std::fprintf(stderr, "workbook: %s exited with %d\n", l.id.c_str(), rc);
      worst = std::max(worst, rc == kExitUsage ? kExitFailed : rc);
    }
  }
  return worst;
}

struct Ranked {
  std::string lesson;
  VariantResult v;
};

// A GPU device node exists (workbook is host-only: it cannot ask the driver).
bool gpu_present() { return fs::exists("/dev/nvidiactl") || fs::exists("/dev/nvidia0"); }

// The ranked tables of a compare, live or recorded: one per problem (lessons
// timed against the same reference share a table; the others each get their own).
void print_compare(const Compare& c) {
  if (!c.runs.empty())
    std::printf("GPU: %s\nshape: M=%lld N=%lld K=%lld, %s\n", describe_gpu(c.runs.front().header).c_str(),
                static_cast<long long>(c.m), static_cast<long long>(c.n), static_cast<long long>(c.k),
                c.runs.front().header.dtype.c_str());
  const std::vector<CompareProblem> problems = compare_problems(c);
  for (size_t p = 0; p < problems.size(); ++p) {
    const CompareProblem& pr = problems[p];
    std::string lessons;
    for (const std::string& l : pr.lessons) lessons += (lessons.empty() ? "" : ", ") + l;
    std::printf("\n%s %s, against: %s\n", pr.lessons.size() > 1 ? "lessons" : "lesson", lessons.c_str(),
                pr.reference_what.c_str());
    for (const Results& r : c.runs)  // lesson 08: its model's N and K at the compare's M
      if (std::find(pr.lessons.begin(), pr.lessons.end(), r.header.lesson) != pr.lessons.end() &&
          std::find(c.own_sizes.begin(), c.own_sizes.end(), r.header.lesson) != c.own_sizes.end())
        std::printf("%s runs at its own N and K: M=%lld N=%lld K=%lld\n", r.header.lesson.c_str(),
                    static_cast<long long>(r.header.m), static_cast<long long>(r.header.n),
                    static_cast<long long>(r.header.k));
    std::printf("%4s  %-18s %-22s %10s %9s %9s  %s\n", "rank", "lesson", "variant", "ms", "TFLOP/s", "% cuBLAS",
                "check");
    std::printf("%s\n", std::string(88, '-').c_str());
    std::printf("%4s  %-18s %-22s %10.4f %9.2f %8.1f%%  reference\n", "-", "reference", pr.reference_name.c_str(),
                pr.reference_ms, pr.reference_tflops, 100.0);
    for (const RankedVariant& v : pr.ranked)
      std::printf("%4d  %-18s %-22s %10.4f %9.2f %8.1f%%  %s\n", v.rank, v.lesson.c_str(), v.variant.c_str(),
                  v.median_ms, v.tflops, 100.0 * v.vs_cublas, !v.checked ? "not checked" : v.passed ? "pass" : "FAIL");
  }
  std::printf("\n%% cuBLAS: each variant against its lesson's reference timed in the same lesson run (interleaved "
              "rounds), ranked by it within its table; lessons with references of their own are ranked apart\n");
  for (const Results& r : c.runs)
    for (const VariantResult& v : r.variants)
      if (v.bound && !v.skipped)
        std::printf("%s: %s is a bound, not a variant (%.2fx its reference), left out of the ranking\n",
                    r.header.lesson.c_str(), v.name.c_str(), v.vs_cublas);
}

// Where no lesson can run: the compare recorded at this shape on a real GPU, or
// one line naming the shapes that are recorded.
int show_recorded_compare(const LessonOptions& opt, const std::string& why_not_here) {
  if (!opt.json_path.empty()) {
    std::fprintf(stderr, "workbook compare: %s; --json needs a GPU to measure on\n", why_not_here.c_str());
    return kExitUsage;
  }
  std::vector<std::string> shapes;
  int shown = 0;
  std::error_code ec;
  const fs::path root = fs::path(assets_dir()) / "results";
  std::vector<fs::path> files;
  for (fs::recursive_directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind("compare-", 0) == 0 && it->path().extension() == ".json") files.push_back(it->path());
  }
  std::sort(files.begin(), files.end());
  for (const fs::path& f : files) {
    try {
      const Compare c = read_compare(f.string());
      if (c.m == opt.m && c.n == opt.n && c.k == opt.k) {
        std::printf("%s%s. RECORDED on %s, %s (not measured on this machine):\n\n", shown ? "\n" : "",
                    why_not_here.c_str(), c.gpu.c_str(), c.date.c_str());
        print_compare(c);
        ++shown;
      } else {
        shapes.push_back(std::to_string(c.m) + "x" + std::to_string(c.n) + "x" + std::to_string(c.k) + " on " + c.gpu);
      }
    } catch (const RecordError& e) {
      std::fprintf(stderr, "workbook compare: %s\n", e.what());
    }
  }
  if (shown > 0) return kExitOk;
  std::string list;
  for (const std::string& sh : shapes) list += (list.empty() ? "" : ", ") + sh;
  std::fprintf(stderr, "workbook compare: %s, and nothing is recorded at %dx%dx%d (recorded: %s)\n",
               why_not_here.c_str(), opt.m, opt.n, opt.k, list.empty() ? "none" : list.c_str());
  return kExitUsage;
}

int cmd_compare(int argc, char** argv) {
  LessonOptions opt;
  std::string message;
  switch (parse_lesson_options("workbook compare", "every variant of every lesson on one shape", argc, argv, opt,
                               message)) {
    case ParseOutcome::done: std::printf("%s", message.c_str()); return kExitOk;
    case ParseOutcome::usage_error:
      std::fprintf(stderr, "workbook compare: %s (see workbook compare --help)\n", message.c_str());
      return kExitUsage;
    case ParseOutcome::run: break;
  }
  if (!opt.variants.empty() || !opt.trace_path.empty() || opt.list) {
    std::fprintf(stderr, "workbook compare: --variant, --trace and --list belong to the lesson binaries "
                         "(see workbook compare --help)\n");
    return kExitUsage;
  }
  std::string why;
  if (!opt.json_path.empty() && !output_path_writable(opt.json_path, &why)) {
    std::fprintf(stderr, "workbook compare: cannot write --json %s: %s\n", opt.json_path.c_str(), why.c_str());
    return kExitUsage;
  }
  std::vector<const LessonInfo*> lessons;
  for (const LessonInfo& l : lesson_catalog())
    if (built_here(l)) lessons.push_back(&l);
  if (lessons.empty()) return show_recorded_compare(opt, "this build has no CUDA lessons (host-only build)");
  if (!gpu_present()) return show_recorded_compare(opt, "no CUDA GPU here");

  const fs::path tmp_dir = fs::temp_directory_path() / ("workbook-compare-" + std::to_string(::getpid()));
  std::error_code ec;
  fs::create_directories(tmp_dir, ec);
  if (ec) {
    std::fprintf(stderr, "workbook compare: cannot create %s: %s\n", tmp_dir.c_str(), ec.message().c_str());
    return kExitFailed;
  }
  std::vector<Ranked> rows;
  std::vector<Results> runs;
  std::vector<std::string> own_sizes;  // lessons run at their own N and K
  int worst = kExitOk;
  for (const LessonInfo* l : lessons) {
    const fs::path json = tmp_dir / (l->id + ".json");
    std::vector<std::string> args = {lesson_binary(*l).string(), "--m", std::to_string(opt.m), "--reps",
                                     std::to_string(opt.reps), "--rounds", std::to_string(opt.rounds), "--seed",
                                     std::to_string(opt.seed), "--device", std::to_string(opt.device), "--json",
                                     json.string()};
    if (l->takes_n_k) {
      for (const std::string& a : {std::string("--n"), std::to_string(opt.n), std::string("--k"), std::to_string(opt.k)})
        args.push_back(a);
    } else {  // its own sizes (lesson 08: its default model) at this M
      std::printf("%s: N and K follow from its own options; run at M = %d with its defaults\n", l->id.c_str(), opt.m);
    }
    if (opt.no_check) args.push_back("--no-check");
    std::printf("running %s ...\n", l->id.c_str());
    const int rc = run_program(args, true);
    if (rc == kExitUsage) {  // the lesson said why in one line
      fs::remove_all(tmp_dir, ec);
      return kExitUsage;
    }
    worst = std::max(worst, rc);
    try {
      Results r = read_results(json.string());
      for (const VariantResult& v : r.variants)
        if (!v.skipped && !v.reference && !v.bound) rows.push_back(Ranked{l->id, v});
      runs.push_back(std::move(r));
      if (!l->takes_n_k) own_sizes.push_back(l->id);
    } catch (const RecordError& e) {
      std::fprintf(stderr, "workbook compare: %s gave no results (%s)\n", l->id.c_str(), e.what());
      worst = std::max(worst, kExitFailed);
    }
  }
  fs::remove_all(tmp_dir, ec);
  if (runs.empty()) return worst == kExitOk ? kExitFailed : worst;

  // Ranked by % of cuBLAS: each variant met cuBLAS round by round in the same
  // run, while its median time also carries the clock the board happened to run
  // at (one run at 4096^3 on H100: balanced 0.196 ms at 101.3% of cuBLAS,
  // balanced_relu 0.184 ms at 100.9%).
  std::stable_sort(rows.begin(), rows.end(), [](const Ranked& a, const Ranked& b) {
    return a.v.vs_cublas != b.v.vs_cublas ? a.v.vs_cublas > b.v.vs_cublas : a.v.median_ms < b.v.median_ms;
  });
  Compare c;
  c.date = utc_timestamp_now();
  c.gpu = runs.front().header.gpu.name;
  c.m = opt.m;
  c.n = opt.n;
  c.k = opt.k;
  c.own_sizes = own_sizes;
  for (size_t i = 0; i < rows.size(); ++i) {
    const VariantResult& v = rows[i].v;
    c.ranked.push_back(RankedVariant{int(i) + 1, rows[i].lesson, v.name, v.median_ms, v.tflops, v.vs_cublas,
                                     v.rel_err, v.passed, v.checked});
  }
  c.runs = runs;
  // cuBLAS once: the median of its medians over the runs of the plain product's lessons.
  c.cublas_median_ms = compare_problems(c).front().reference_ms;
  std::printf("\n");
  print_compare(c);
  if (!opt.json_path.empty()) {
    try {
      write_compare(opt.json_path, c);
      std::printf("results: %s\n", opt.json_path.c_str());
    } catch (const RecordError& e) {
      std::fprintf(stderr, "workbook compare: %s\n", e.what());
      return kExitFailed;
    }
  }
  return worst;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 1) return cmd_run_all();
  const std::string cmd = argv[1];
  if (cmd == "list" && argc == 2) return cmd_list(false);
  if (cmd == "list" && argc == 3 && std::string(argv[2]) == "--ids") return cmd_list(true);
  if (cmd == "compare") return cmd_compare(argc - 1, argv + 1);
  if (cmd == "--help" || cmd == "-h" || cmd == "help") {
    std::printf("%s", kUsage);
    return kExitOk;
  }
  std::fprintf(stderr, "workbook: unknown command '%s' (see workbook --help)\n", argv[1]);
  return kExitUsage;
}
