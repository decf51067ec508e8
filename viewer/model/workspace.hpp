// What the viewer has open: the asset list, the traces and results loaded from
// it or from paths, and the errors a bad file produced (shown in the UI; a
// malformed file never stops the viewer). No ImGui here.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "model/playback.hpp"
#include "model/timeline.hpp"
#include "model/unit_colours.hpp"
#include "records/records.hpp"

namespace wb::viewer {

enum class FileKind { trace, results, compare, unknown };

// Reads the "schema" a workbook file declares, from its first few kilobytes
// (traces run to megabytes; this avoids parsing one twice).
FileKind detect_file_kind(const std::string& text);

struct AssetEntry {
  std::string path;   // full path
  std::string label;  // relative to the asset folder, e.g. "traces/nvidia-h100-80gb-hbm3/lesson03_grouped.grouped.json"
  FileKind kind;
  uintmax_t bytes;
  std::string folder;  // the GPU's folder, e.g. "nvidia-h100-80gb-hbm3"
  // What the file holds, from its header: "03_grouped row_major 8192^3" (a
  // trace: lesson, variant, shape) or "04_hopper 2048^3 targets" (results:
  // lesson, shape, and what else the file name says). The file name when the
  // header cannot be read.
  std::string title;
};

// The title of a trace or results file from the start of its text (the header
// before its records or variants), and its file name (for the results' note).
std::string asset_title(FileKind kind, const std::string& head, const std::string& file_name);

// The asset folder: --assets, else $WORKBOOK_ASSETS, else the build's default.
std::string resolve_assets_dir(const std::string& from_command_line, const char* compiled_default);

// Every trace or results file (.json, or .json.gz: compressed) under
// <dir>/results and <dir>/traces (other JSON there, e.g. Perfetto exports and
// compare tables, is left out), sorted by label. A missing
// folder is an empty list, not an error (nothing has been recorded yet).
std::vector<AssetEntry> list_assets(const std::string& dir);

struct LoadedTrace {
  std::string path;
  std::string label;  // "lesson03_grouped / grouped on NVIDIA H100 80GB HBM3"
  Trace trace;
  TimelineModel timeline;
  // The timeline's colourings that say something for this trace, and the one it
  // opens with (colourings_for, default_colouring): found once, at load.
  std::vector<UnitColouring> colourings;
  UnitColouring first_colouring = UnitColouring::launch_order;
};

struct LoadedResults {
  std::string path;
  Results results;
};

class Workspace {
 public:
  std::string assets_dir;
  std::vector<AssetEntry> assets;
  std::vector<std::shared_ptr<const LoadedTrace>> traces;
  std::vector<LoadedResults> results;
  std::vector<std::string> errors;  // newest last

  int current_trace = -1;  // index into traces; -1: none
  int compare_trace = -1;  // second trace for comparisons; -1: none

  // Time along the current trace (ns), shared by the tile grid and the timeline.
  Playback trace_playback;

  void refresh_assets();
  // Loads a trace or results file. On failure returns false and appends the
  // reason to `errors`. A trace becomes the current one (or the comparison when
  // `as_comparison`); a file already open is not loaded twice.
  bool open(const std::string& path, bool as_comparison = false);
  // The same for a file's contents already in memory (JSON, or gzip-compressed
  // JSON); `path` names it in messages. A `workbook compare` file opens as the
  // results of each lesson run it holds.
  bool open_text(const std::string& bytes, const std::string& path, bool as_comparison = false);
  // Loads every results file of the asset list (they are small).
  void open_all_asset_results();
  // Adds a trace already in memory (e.g. one just recorded on this GPU).
  void add_trace(Trace trace, const std::string& path, bool as_comparison = false);

  const LoadedTrace* current() const { return at(current_trace); }
  const LoadedTrace* comparison() const { return at(compare_trace); }
  void select_trace(int index);
  // The loaded trace with the most records (the benchmark's), or -1.
  int largest_trace() const;

 private:
  const LoadedTrace* at(int i) const { return i >= 0 && i < int(traces.size()) ? traces[size_t(i)].get() : nullptr; }
};

std::string trace_label(const Trace& t);

}  // namespace wb::viewer
