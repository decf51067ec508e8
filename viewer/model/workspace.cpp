#include "model/workspace.hpp"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <system_error>

#include <nlohmann/json.hpp>

namespace wb::viewer {

namespace fs = std::filesystem;

FileKind detect_file_kind(const std::string& text) {
  // The first "schema" key's value names the file; writers put it first.
  const std::string head = text.substr(0, 4096);
  const auto key = head.find("\"schema\"");
  if (key == std::string::npos) return FileKind::unknown;
  const auto open = head.find('"', head.find(':', key));
  const auto close = open == std::string::npos ? open : head.find('"', open + 1);
  if (close == std::string::npos) return FileKind::unknown;
  const std::string value = head.substr(open + 1, close - open - 1);
  if (value == kTraceSchema) return FileKind::trace;
  if (value == kResultsSchema) return FileKind::results;
  if (value == kCompareSchema) return FileKind::compare;
  return FileKind::unknown;
}

namespace {

std::string shape_text(int64_t m, int64_t n, int64_t k) {
  if (m == n && n == k) return std::to_string(m) + "^3";
  return std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k);
}

// The file name without its extension and without what the title says already
// (the lesson, the variant, the shape): "lesson04_hopper-targets-2048.json" -> "targets".
std::string file_note(std::string stem, const std::vector<std::string>& said) {
  for (const std::string& word : said)
    if (!word.empty())
      for (size_t at; (at = stem.find(word)) != std::string::npos;) stem.erase(at, word.size());
  std::string note;
  for (char c : stem) {
    const bool sep = c == '-' || c == '.' || c == '_';
    if (sep && (note.empty() || note.back() == ' ')) continue;
    note += sep ? ' ' : c;
  }
  while (!note.empty() && note.back() == ' ') note.pop_back();
  return note;
}

}  // namespace

std::string asset_title(FileKind kind, const std::string& head, const std::string& file_name) {
  std::string stem = file_name;
  for (const char* ext : {".gz", ".json"})
    if (stem.size() > std::strlen(ext) && stem.compare(stem.size() - std::strlen(ext), std::strlen(ext), ext) == 0)
      stem.resize(stem.size() - std::strlen(ext));
  // The header is everything before the records (a trace) or the variants (results): close it and parse it.
  const auto cut = head.find(kind == FileKind::trace ? "\"records\"" : "\"variants\"");
  if (cut == std::string::npos) return stem;
  std::string prefix = head.substr(0, cut);
  while (!prefix.empty() && (std::isspace(static_cast<unsigned char>(prefix.back())) || prefix.back() == ','))
    prefix.pop_back();
  const nlohmann::json j = nlohmann::json::parse(prefix + "}", nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("lesson") || !j["lesson"].is_string() || !j.contains("shape") ||
      !j["shape"].is_object())
    return stem;
  const std::string lesson = j["lesson"].get<std::string>();
  const nlohmann::json& shape = j["shape"];
  auto dim = [&](const char* key) { return shape.contains(key) && shape[key].is_number_integer() ? shape[key].get<int64_t>() : 0; };
  const int64_t m = dim("m"), n = dim("n"), k = dim("k");
  const std::string shown_lesson = lesson.rfind("lesson", 0) == 0 ? lesson.substr(6) : lesson;
  std::string title = shown_lesson;
  std::string variant;
  if (kind == FileKind::trace && j.contains("variant") && j["variant"].is_string()) {
    variant = j["variant"].get<std::string>();
    title += " " + variant;
  }
  title += " " + shape_text(m, n, k);
  const std::string note = file_note(stem, {lesson, variant, std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k),
                                            std::to_string(m)});
  if (kind == FileKind::results && !note.empty()) title += " " + note;
  return title;
}

std::string resolve_assets_dir(const std::string& from_command_line, const char* compiled_default) {
  if (!from_command_line.empty()) return from_command_line;
  if (const char* env = std::getenv("WORKBOOK_ASSETS"); env && *env) return env;
  return compiled_default ? compiled_default : "assets";
}

std::vector<AssetEntry> list_assets(const std::string& dir) {
  std::vector<AssetEntry> out;
  for (const char* sub : {"results", "traces"}) {
    const fs::path root = fs::path(dir) / sub;
    std::error_code ec;
    if (!fs::is_directory(root, ec)) continue;
    for (fs::recursive_directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
      const std::string name = it->path().filename().string();
      const bool json = name.size() > 5 && name.compare(name.size() - 5, 5, ".json") == 0;
      const bool gz = name.size() > 8 && name.compare(name.size() - 8, 8, ".json.gz") == 0;
      if (!it->is_regular_file(ec) || !(json || gz)) continue;
      // Only results and traces: the folders also hold `workbook compare` summaries and
      // Perfetto exports, which are for other tools.
      std::string head;
      if (gz) {
        try {
          head = gzip_decompress(read_text_file(it->path().string())).substr(0, 16384);
        } catch (const RecordError&) {
          continue;  // opened, it will say what is wrong
        }
      } else {
        head.assign(4096, '\0');
        std::ifstream f(it->path(), std::ios::binary);
        f.read(head.data(), std::streamsize(head.size()));
        head.resize(size_t(f.gcount()));
      }
      const FileKind kind = detect_file_kind(head);
      if (kind != FileKind::trace && kind != FileKind::results) continue;
      AssetEntry e;
      e.path = it->path().string();
      e.label = fs::relative(it->path(), dir, ec).generic_string();
      e.kind = kind;
      e.bytes = it->file_size(ec);
      e.folder = fs::relative(it->path().parent_path(), root, ec).generic_string();
      if (kind == FileKind::results && !gz) head = read_text_file(e.path);  // results are small; their header may pass 4 kB
      e.title = asset_title(kind, head, name);
      out.push_back(std::move(e));
    }
  }
  std::sort(out.begin(), out.end(), [](const AssetEntry& a, const AssetEntry& b) { return a.label < b.label; });
  return out;
}

std::string trace_label(const Trace& t) {
  return t.header.lesson + " / " + t.variant + " " + std::to_string(t.header.m) + "x" + std::to_string(t.header.n) +
         "x" + std::to_string(t.header.k) + " on " + t.header.gpu.name;
}

void Workspace::refresh_assets() { assets = list_assets(assets_dir); }

void Workspace::add_trace(Trace trace, const std::string& path, bool as_comparison) {
  // Times from 0, so the playhead, the tile grid and the timeline share one clock.
  rebase_trace_times(trace.records);
  auto loaded = std::make_shared<LoadedTrace>();
  loaded->path = path;
  loaded->label = trace_label(trace);
  loaded->timeline = TimelineModel(trace.records, trace.header.gpu.sm_count);
  loaded->colourings = colourings_for(trace);
  loaded->first_colouring = default_colouring(trace);
  loaded->trace = std::move(trace);
  traces.push_back(std::move(loaded));
  const int index = int(traces.size()) - 1;
  if (as_comparison) compare_trace = index;
  else select_trace(index);
}

void Workspace::select_trace(int index) {
  if (index < 0 || index >= int(traces.size())) return;
  current_trace = index;
  if (compare_trace == index) compare_trace = -1;
  trace_playback.set_length(double(traces[size_t(index)]->timeline.end_ns()));
  trace_playback.set_position(0);
}

bool Workspace::open(const std::string& path, bool as_comparison) {
  for (size_t i = 0; i < traces.size(); ++i)
    if (traces[i]->path == path) {
      if (as_comparison) compare_trace = int(i);
      else select_trace(int(i));
      return true;
    }
  for (const auto& r : results)
    if (r.path == path) return true;
  std::string text;
  try {
    text = read_text_file(path);
  } catch (const RecordError& e) {
    errors.push_back(e.what());
    return false;
  }
  return open_text(text, path, as_comparison);
}

bool Workspace::open_text(const std::string& bytes, const std::string& path, bool as_comparison) {
  try {
    try {
      const std::string text = is_gzip(bytes) ? gzip_decompress(bytes) : bytes;
      switch (detect_file_kind(text)) {
        case FileKind::trace: add_trace(trace_from_json(text), path, as_comparison); return true;
        case FileKind::results: results.push_back(LoadedResults{path, results_from_json(text)}); return true;
        case FileKind::compare: {
          Compare c = compare_from_json(text);
          for (Results& r : c.runs) results.push_back(LoadedResults{path + " (" + r.header.lesson + ")", std::move(r)});
          return true;
        }
        case FileKind::unknown:
          throw RecordError("not a matmul-workbook trace, results or compare file (no known \"schema\")");
      }
    } catch (const RecordError& e) {
      throw RecordError(path + ": " + e.what());
    }
  } catch (const RecordError& e) {
    errors.push_back(e.what());
  } catch (const std::exception& e) {
    errors.push_back(path + ": " + e.what());
  }
  return false;
}

void Workspace::open_all_asset_results() {
  for (const AssetEntry& e : assets)
    if (e.kind == FileKind::results) open(e.path);
}

int Workspace::largest_trace() const {
  int best = -1;
  for (size_t i = 0; i < traces.size(); ++i)
    if (best < 0 || traces[i]->trace.records.size() > traces[size_t(best)]->trace.records.size()) best = int(i);
  return best;
}

}  // namespace wb::viewer
