// The workbook's two file formats, written by the lessons and read by the
// workbook, the viewer and the tests: results (one per lesson run) and traces
// (one per traced variant and shape). Both are JSON, versioned and validated on
// read: a malformed file raises RecordError with a one-line reason.
//
// Host only; built without CUDA.
#pragma once

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "schedule/trace_record.hpp"

namespace wb {

inline constexpr const char* kResultsSchema = "matmul-workbook/results";
inline constexpr const char* kTraceSchema = "matmul-workbook/trace";
inline constexpr const char* kCompareSchema = "matmul-workbook/compare";
inline constexpr int kRecordsVersion = 1;

struct RecordError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct GpuInfo {
  std::string name;
  int cc_major = 0;
  int cc_minor = 0;
  int sm_count = 0;
  int64_t l2_bytes = 0;
  int64_t memory_bytes = 0;
  int sm_clock_khz = 0;       // peak SM clock the device reports
  int mem_clock_khz = 0;      // peak memory clock
  int mem_bus_bits = 0;
  int max_smem_per_block = 0; // opt-in bytes
  double peak_dram_gbps() const { return 2.0 * mem_clock_khz * 1e3 * (mem_bus_bits / 8.0) / 1e9; }
};

struct Versions {
  std::string driver;   // e.g. "13.0"
  std::string runtime;  // CUDA runtime
  std::string cublas;
};

// A lesson's own size parameter, as given on its command line: a number, or a
// word (an activation's name, a model's).
struct ShapeParam {
  std::string text;     // as given (numbers too)
  bool numeric = false;
  double value = 0;     // when numeric
};

// Everything a results file and a trace file share.
struct RunHeader {
  std::string date;    // ISO 8601, UTC
  std::string commit;  // git commit the binaries were built from
  Versions versions;
  GpuInfo gpu;
  std::string lesson;  // e.g. "lesson02_blocked"
  int64_t m = 0, n = 0, k = 0;
  std::map<std::string, ShapeParam> shape_params;  // the lesson's own (act, split_k, group_size, sparsity, ...)
  std::string dtype = "fp16 in, fp32 accumulate, fp16 out";
};

// One output of a variant, checked against the reference's and against fp64
// on sampled rows.
struct OutputCheck {
  std::string name;             // "C", "dX", ...
  double rel_err = 0;           // ||out - reference|| / ||reference||
  double rel_err_fp64 = 0;      // same, against fp64 on sampled rows
  double max_abs_err = 0;       // against fp64
  int64_t mismatches = 0;       // elements outside the elementwise bound (NaN counts)
  bool passed = false;
};

struct VariantResult {
  std::string name;
  std::string what;             // one line: what the variant does
  bool reference = false;       // the cuBLAS row
  bool bound = false;           // a bound to compare with, not a way to solve the problem (never "the fastest")
  bool skipped = false;
  std::string skip_reason;
  double median_ms = 0, min_ms = 0, max_ms = 0;
  int samples = 0;
  double flops = 0;             // work this variant does
  double bytes = 0;             // DRAM bytes this variant must move at least
  std::string bytes_what;       // when `bytes` counts something else: what ("" : the usual)
  double tflops = 0, gbps = 0;
  double rel_err = 0;           // ||out - reference|| / ||reference|| (the worst output)
  double rel_err_fp64 = 0;      // same, against the fp64 reference on sampled rows
  double max_abs_err = 0;       // against the fp64 reference
  bool checked = true;          // false with --no-check
  bool passed = false;
  double vs_cublas = 0;         // the reference's median / this median, same run
  int split_k = 0;              // k ranges per output tile it ran with (0: not recorded)
  int64_t bitwise_diffs = -1;   // output elements that differed bitwise between two runs (-1: not measured)
  std::vector<OutputCheck> outputs;  // per output (empty in files written before they were kept)
};

struct TimingSetup {
  int rounds = 0;               // interleaved rounds of (variant, cuBLAS)
  int reps_per_round = 0;
  int64_t l2_flush_bytes = 0;   // written between timed runs
  int warmup = 0;
};

struct Results {
  RunHeader header;
  TimingSetup timing;
  std::string reference = "cublas";  // the name of the row every variant is timed against
  double copy_gbps = 0;              // a device-to-device copy in the same run (read + write), 0: not measured
  double read_floor_ms = 0;          // a kernel that only reads the copy's bytes, timed like the variants; 0: not measured
  double read_floor_bytes = 0;       // the bytes it read
  std::vector<VariantResult> variants;
};

// One product of a launch that computes several (lesson 05: dX and dW). Its
// tiles occupy tile rows first_row .. first_row + tiles_m - 1 of the trace's
// grid and columns 0 .. tiles_n - 1; its units reduce over [0, k).
struct ProductGrid {
  std::string name;  // "dX"
  int64_t m = 0, n = 0, k = 0;
  int tiles_m = 0, tiles_n = 0;
  int first_row = 0;
  // Which of its dimensions runs over KernelConfig::gathered (lesson 08: the
  // active neurons): "" none, "n" its columns, "k" its reduction. `gathers_per`
  // consecutive positions share one entry (SwiGLU: a neuron's gate and up
  // columns); positions past the list are padding.
  std::string gathers;
  int gathers_per = 1;
};

// Rows or columns of a bigger matrix that a launch gathered (lesson 08: the
// router's active neurons): entry j of a gathering product is `index[j]` of `of`.
struct GatheredIndex {
  std::string what;              // "neurons"
  int64_t of = 0;                // how many there are (d_ff)
  std::vector<int32_t> index;    // distinct, each in [0, of)
};

struct KernelConfig {
  int block_m = 0, block_n = 0, block_k = 0;  // tile sizes
  int threads = 0;                            // per block
  int stages = 1;                             // pipeline depth
  std::string order = "row_major";            // tile order
  int group_m = 1;
  int split_k = 1;
  int tiles_m = 0, tiles_n = 0;
  int64_t grid_blocks = 0;                    // blocks launched
  int64_t work_units = 0;                     // records expected
  int blocks_per_sm = 0;                      // occupancy API
  int smem_bytes = 0;
  bool persistent = false;
  // Empty: one product, the header's M x N x K. Otherwise the products stacked
  // in the grid (tiles_m their rows together, tiles_n the widest).
  std::vector<ProductGrid> products;
  GatheredIndex gathered;  // empty index: the launch gathers nothing (in the file: "gathered", after the records)
};

struct Trace {
  RunHeader header;
  std::string variant;
  KernelConfig kernel;
  double median_ms = 0;      // timed, untraced
  double traced_ms = 0;      // the traced launch
  uint64_t time_origin_ns = 0;  // records' times are relative to this %globaltimer value
  std::vector<TraceRecord> records;
};

// Which entries of kernel.gathered a work unit used, [first, last): its tile's
// columns for a product that gathers along n, its k range along k; {0, 0} for
// a unit of a product that gathers nothing (or a trace without a list).
struct EntryRange {
  int64_t first = 0, last = 0;
  bool empty() const { return last <= first; }
};
EntryRange gathered_entries(const Trace& t, const TraceRecord& r);
// The product a tile row belongs to (null: the trace has no products).
const ProductGrid* product_of_row(const KernelConfig& c, int tile_m);

// `workbook compare`'s file: every variant of every lesson on one shape, ranked
// by its ratio to the reference, and each lesson's whole run.
struct RankedVariant {
  int rank = 0;          // 1, 2, ... in order
  std::string lesson;    // e.g. "lesson04_hopper"
  std::string variant;
  double median_ms = 0, tflops = 0, vs_cublas = 0, rel_err = 0;
  bool passed = false, checked = true;
};

struct Compare {
  std::string date;
  std::string gpu;                 // the GPU's name
  int64_t m = 0, n = 0, k = 0;
  // Lessons whose N and K follow from their own options (lesson 08's model):
  // their runs are at the compare's M and their own N and K.
  std::vector<std::string> own_sizes;
  // The reference's median over the runs of the first of compare_problems (the
  // plain product on cuBLAS); files written before the problems were told apart
  // took it over every run (0: none).
  double cublas_median_ms = 0;
  std::vector<RankedVariant> ranked;  // every lesson's variants by their ratio to their own reference
  std::vector<Results> runs;       // one per lesson
};

// One problem of a compare. Runs whose reference row says the same (the plain
// product on cuBLAS) solve one problem and are ranked together; a lesson with a
// reference of its own (lesson 05's backward sequence, lesson 07's cuBLAS on the
// dequantized weights, lesson 08's dense FFN) is a problem of its own, since a
// ratio to one reference says nothing against a ratio to another.
struct CompareProblem {
  std::string reference_what;         // the reference row's line
  std::string reference_name;         // its name ("cublas")
  std::vector<std::string> lessons;   // in the order of the runs
  double reference_ms = 0;            // the median of those runs' reference medians
  double reference_tflops = 0;        // that run's reference rate
  std::vector<RankedVariant> ranked;  // its variants in Compare::ranked's order, ranked 1, 2, ... within it
};
// The problems of a compare: the one most lessons share first, then the others
// in the order of their runs.
std::vector<CompareProblem> compare_problems(const Compare& c);

// Serialise (pretty JSON) and parse/validate. Parse errors throw RecordError.
std::string results_to_json(const Results& r);
Results results_from_json(const std::string& text);
std::string trace_to_json(const Trace& t);
Trace trace_from_json(const std::string& text);
std::string compare_to_json(const Compare& c);
Compare compare_from_json(const std::string& text);

// gzip (through zlib). Traces are kept compressed (".json.gz"): their records
// repeat, so they shrink about tenfold, and Perfetto opens them as they are.
bool is_gzip(const std::string& bytes);
// Deterministic: no file name or time in the header, so equal text gives equal bytes.
std::string gzip_compress(const std::string& text);
// RecordError when the data is corrupt, truncated, or would exceed `max_bytes`.
std::string gzip_decompress(const std::string& bytes, size_t max_bytes = size_t(256) << 20);
// A trace from a file's bytes: its JSON, or that JSON gzip-compressed.
Trace trace_from_bytes(const std::string& bytes);

// Files. Writes go to a temporary name in the same folder, then rename, so a
// reader never sees half a file. Errors throw RecordError naming the path.
// A path ending in ".gz" is written gzip-compressed (write_trace, and
// write_maybe_compressed for any text); read_trace takes either form.
void write_text_file_atomic(const std::string& path, const std::string& text);
void write_maybe_compressed(const std::string& path, const std::string& text);
std::string read_text_file(const std::string& path);
void write_results(const std::string& path, const Results& r);
Results read_results(const std::string& path);
void write_trace(const std::string& path, const Trace& t);
Trace read_trace(const std::string& path);
void write_compare(const std::string& path, const Compare& c);
Compare read_compare(const std::string& path);

// True when a file can be created at `path` (checked before a run, so a bad
// output path is reported before any GPU work). On false, `why` says why.
bool output_path_writable(const std::string& path, std::string* why);

// Perfetto / chrome://tracing export: pid = SM, tid = resident slot.
std::string trace_to_chrome_json(const Trace& t);

// Resident slot per record: blocks on one SM whose lifetimes overlap get
// different slots, so they do not overlap on one track.
std::vector<int> assign_resident_slots(const std::vector<TraceRecord>& records);

// Rebases record times so the earliest start is 0; returns the origin.
uint64_t rebase_trace_times(std::vector<TraceRecord>& records);

// "2026-11-22T03:04:05Z"
std::string utc_timestamp_now();

}  // namespace wb
