#include "harness/options.hpp"

#include <climits>
#include <cstdlib>

#include <CLI/CLI.hpp>

namespace wb {

namespace {

bool in_range(int64_t v, int64_t lo, int64_t hi) { return v >= lo && v <= hi; }

std::string first_line(const std::string& s) {
  const auto nl = s.find('\n');
  return nl == std::string::npos ? s : s.substr(0, nl);
}

}  // namespace

ParseOutcome parse_lesson_options(const std::string& program, const std::string& description, int argc,
                                  char** argv, LessonOptions& out, std::string& message,
                                  const std::vector<ParamSpec>& params) {
  CLI::App app{description, program};
  // Sizes are read as 64-bit so that "--m 99999999999" is reported as too large, not wrapped.
  int64_t m = out.m, n = out.n, k = out.k, reps = out.reps, rounds = out.rounds, device = out.device;
  app.add_option("--m", m, "rows of A and C")->capture_default_str();
  CLI::Option* n_option = app.add_option("--n", n, "columns of B and C")->capture_default_str();
  CLI::Option* k_option = app.add_option("--k", k, "columns of A, rows of B")->capture_default_str();
  app.add_option("--variant", out.variants, "run only these variants (repeat or comma-separate)")->delimiter(',');
  app.add_option("--reps", reps, "timed runs per variant (median reported)")->capture_default_str();
  app.add_option("--rounds", rounds, "interleaved rounds of (variant, cuBLAS)")->capture_default_str();
  app.add_option("--seed", out.seed, "seed of the random inputs")->capture_default_str();
  app.add_option("--device", device, "CUDA device ordinal")->capture_default_str();
  app.add_option("--json", out.json_path, "write results JSON to PATH");
  app.add_option("--trace", out.trace_path, "write a per-block trace JSON (and a Perfetto export) to PATH");
  app.add_flag("--no-check", out.no_check, "skip verification against cuBLAS and fp64");
  app.add_flag("--list", out.list, "list the variants and exit");
  app.add_flag("--ncu", out.ncu,
               "also measure each variant's DRAM bytes read and L2 hit rate under Nsight Compute (ncu), beside "
               "the models' predictions");
  app.add_flag("--profile-once", out.profile_once)->group("");  // the child --ncu runs under ncu
  std::vector<std::string> param_values;
  param_values.reserve(params.size());  // the options hold pointers into it
  for (const ParamSpec& p : params) {
    param_values.push_back(p.default_value);
    std::string help = p.help;
    if (!p.choices.empty()) {
      help += " (";
      for (size_t i = 0; i < p.choices.size(); ++i) help += (i ? ", " : "") + p.choices[i];
      help += ")";
    }
    app.add_option(p.option(), param_values.back(), help)->capture_default_str();
  }
  app.footer(
      "The report's GB/s is the bytes a variant must move at least (every input read once, every output written "
      "once; a variant that counts otherwise says so under the table) over its median time.");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    message = app.help();
    return ParseOutcome::done;
  } catch (const CLI::ParseError& e) {
    message = first_line(e.what());
    return ParseOutcome::usage_error;
  }
  const struct { const char* name; int64_t value; int64_t lo, hi; } checks[] = {
      {"--m", m, 1, INT_MAX},      {"--n", n, 1, INT_MAX},         {"--k", k, 1, INT_MAX},
      {"--reps", reps, 1, 100000}, {"--rounds", rounds, 1, 1000}, {"--device", device, 0, 1023},
  };
  for (const auto& c : checks) {
    if (!in_range(c.value, c.lo, c.hi)) {
      message = std::string(c.name) + " must be between " + std::to_string(c.lo) + " and " + std::to_string(c.hi) +
                " (got " + std::to_string(c.value) + ")";
      return ParseOutcome::usage_error;
    }
  }
  for (const std::string& v : out.variants) {
    if (v.empty()) {
      message = "--variant: empty variant name";
      return ParseOutcome::usage_error;
    }
  }
  if (out.profile_once && out.variants.size() != 1) {
    message = "--profile-once takes exactly one --variant";
    return ParseOutcome::usage_error;
  }
  if (!out.json_path.empty() && out.json_path == out.trace_path) {
    message = "--json and --trace name the same file";
    return ParseOutcome::usage_error;
  }
  for (size_t i = 0; i < params.size(); ++i) {
    if (const std::string why = check_param(params[i], param_values[i]); !why.empty()) {
      message = why;
      return ParseOutcome::usage_error;
    }
    out.params.set(params[i].name, param_values[i]);
  }
  out.n_given = n_option->count() > 0;
  out.k_given = k_option->count() > 0;
  out.m = int(m);
  out.n = int(n);
  out.k = int(k);
  out.reps = int(reps);
  out.rounds = int(rounds);
  out.device = int(device);
  return ParseOutcome::run;
}

namespace {
// The file's extension as the workbook names its files: ".json" or ".json.gz" ("" when neither).
std::string json_extension(const std::string& path) {
  for (const char* ext : {".json.gz", ".json"}) {
    const size_t n = std::char_traits<char>::length(ext);
    if (path.size() > n && path.compare(path.size() - n, n, ext) == 0) return ext;
  }
  return "";
}
}  // namespace

std::string trace_path_for(const std::string& trace_path, const std::string& variant, bool several) {
  if (!several) return trace_path;
  const std::string ext = json_extension(trace_path);
  if (!ext.empty()) return trace_path.substr(0, trace_path.size() - ext.size()) + "." + variant + ext;
  const auto slash = trace_path.find_last_of('/');
  const auto dot = trace_path.find_last_of('.');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) return trace_path + "." + variant;
  return trace_path.substr(0, dot) + "." + variant + trace_path.substr(dot);
}

std::string perfetto_path_for(const std::string& trace_json_path) {
  const std::string ext = json_extension(trace_json_path);
  if (ext.empty()) return trace_json_path + ".perfetto.json";
  return trace_json_path.substr(0, trace_json_path.size() - ext.size()) + ".perfetto" + ext;
}

std::string assets_dir() {
  if (const char* env = std::getenv("WORKBOOK_ASSETS"); env && *env) return env;
  return WORKBOOK_SOURCE_ASSETS;
}

const char* build_commit() { return WORKBOOK_GIT_COMMIT; }

}  // namespace wb
