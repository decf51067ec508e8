// The command-line programs with bad arguments: one line on stderr, the exit
// codes of DESIGN.md's table, nothing written. Runs the real binaries.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "harness/catalog.hpp"
#include "harness/ncu.hpp"
#include "harness/options.hpp"
#include "harness/report.hpp"
#include "run_binary.hpp"

namespace {

namespace fs = std::filesystem;

using wb::testing::Ran;

Ran run(const std::string& args) { return wb::testing::run_binary(args); }

int lines(const std::string& s) {
  int n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

bool have(const std::string& binary) { return fs::exists(std::string(WORKBOOK_BIN_DIR) + "/" + binary); }

bool gpu_present() { return fs::exists("/dev/nvidiactl") || fs::exists("/dev/nvidia0"); }

TEST(WorkbookCli, BadCommandsAndArguments) {
  Ran r = run("workbook frobnicate");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_EQ(lines(r.out), 1) << r.out;
  r = run("workbook compare --m -5");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_EQ(lines(r.out), 1) << r.out;
  EXPECT_NE(r.out.find("--m"), std::string::npos) << r.out;
  r = run("workbook compare --n abc");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_EQ(lines(r.out), 1) << r.out;
  r = run("workbook compare --trace t.json");
  EXPECT_EQ(r.code, 2) << r.out;
  r = run("workbook compare --json /no/such/dir/c.json");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("cannot write"), std::string::npos) << r.out;
}

TEST(WorkbookCli, ListAndHelp) {
  Ran r = run("workbook list");
  EXPECT_EQ(r.code, 0) << r.out;
  for (const std::string& id : wb::lesson_ids()) EXPECT_NE(r.out.find(id), std::string::npos) << r.out;
  // One id per line, in order: what the GPU check loops over.
  r = run("workbook list --ids");
  EXPECT_EQ(r.code, 0) << r.out;
  std::string expected;
  for (const std::string& id : wb::lesson_ids()) expected += id + "\n";
  EXPECT_EQ(r.out, expected);
  r = run("workbook --help");
  EXPECT_EQ(r.code, 0) << r.out;
}

// Without a GPU, `workbook compare` shows what was recorded at that shape, or
// says in one line that nothing was and which shapes were (assets/results).
TEST(WorkbookCli, WithoutGpuCompareShowsTheRecordingOrSaysWhichShapesAre) {
  if (gpu_present()) GTEST_SKIP() << "a GPU is present: the no-GPU path is not reachable here";
  Ran r = run("workbook compare --m 64 --n 64 --k 64");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_EQ(lines(r.out), 1) << r.out;
  EXPECT_TRUE(r.out.find("no CUDA GPU") != std::string::npos || r.out.find("host-only") != std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("recorded: 2048x2048x2048"), std::string::npos) << r.out;
  r = run("workbook compare --m 2048 --n 2048 --k 2048");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("RECORDED on"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("lesson04_hopper"), std::string::npos) << r.out;
  // Lessons with references of their own (the backward's sequence, the dense FFN) get tables of
  // their own: none of their rows sits in the plain product's table.
  const size_t own05 = r.out.find("lesson lesson05_backward, against:");
  const size_t own08 = r.out.find("lesson lesson08_sparse_ffn, against:");
  ASSERT_NE(own05, std::string::npos) << r.out;
  ASSERT_NE(own08, std::string::npos) << r.out;
  const size_t plain = r.out.find("lessons lesson01_naive");
  ASSERT_NE(plain, std::string::npos) << r.out;
  EXPECT_LT(plain, std::min(own05, own08)) << r.out;
  EXPECT_GT(r.out.find("  lesson05_backward "), own05) << r.out;
  EXPECT_GT(r.out.find("  lesson08_sparse_ffn "), own08) << r.out;
  r = run("workbook compare --m 2048 --n 2048 --k 2048 --json /tmp/wb-no-gpu-compare.json");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_FALSE(fs::exists("/tmp/wb-no-gpu-compare.json"));
}

// `workbook list` counts every recorded file of a lesson, on every GPU and shape.
TEST(WorkbookCli, ListCountsEveryRecording) {
  const Ran r = run("workbook list");
  for (const std::string& id : wb::lesson_ids()) {
    const size_t n = wb::recorded_results_files(wb::assets_dir(), id).size();
    const size_t at = r.out.find(id);
    ASSERT_NE(at, std::string::npos) << r.out;
    const std::string line = r.out.substr(at, r.out.find('\n', at) - at);
    EXPECT_NE(line.find(std::to_string(n) + " recorded"), std::string::npos) << line;
  }
  EXPECT_GT(wb::recorded_results_files(wb::assets_dir(), "lesson04_hopper").size(), 1u);
}

TEST(WorkbookCli, WithoutGpuTheMainJobShowsLessonsAndSucceeds) {
  if (gpu_present()) GTEST_SKIP() << "a GPU is present: the main job would run every lesson at 4096^3";
  Ran r = run("workbook");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("Lesson 01"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Lesson 02"), std::string::npos) << r.out;
}

class LessonCli : public ::testing::TestWithParam<std::string> {};

TEST_P(LessonCli, BadArgumentsAreOneLineAndExit2BeforeAnyGpuCall) {
  const std::string lesson = GetParam();
  if (!have(lesson)) GTEST_SKIP() << lesson << " is not in this build (host-only, or its sources are not there)";
  const char* bad[] = {"--m 0", "--n -1", "--k abc", "--m 3000000000", "--variant no_such_variant",
                       "--json /no/such/dir/r.json", "--trace /no/such/dir/t.json", "--reps 0", "--bogus",
                       "--device 9999"};
  for (const char* args : bad) {
    const Ran r = run(lesson + " " + args);
    EXPECT_EQ(r.code, 2) << lesson << " " << args << ": " << r.out;
    // --device 9999 is checked against the devices present, after the explanation is printed.
    if (std::string(args) != "--device 9999") EXPECT_EQ(lines(r.out), 1) << lesson << " " << args << ": " << r.out;
  }
  EXPECT_FALSE(fs::exists("/no/such/dir"));
}

TEST_P(LessonCli, ListsVariantsAndHelp) {
  const std::string lesson = GetParam();
  if (!have(lesson)) GTEST_SKIP() << lesson << " is not in this build (host-only, or its sources are not there)";
  Ran r = run(lesson + " --list");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_GE(lines(r.out), 2) << r.out;
  r = run(lesson + " --help");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("--trace"), std::string::npos);
}

TEST_P(LessonCli, WithoutGpuShowsRecordedResultsOrRefusesJson) {
  const std::string lesson = GetParam();
  if (!have(lesson)) GTEST_SKIP() << lesson << " is not in this build (host-only, or its sources are not there)";
  if (gpu_present()) GTEST_SKIP() << "a GPU is present: the no-GPU path is not reachable here";
  // Lesson 08 takes N and K from --model.
  const std::string size = lesson == "lesson08_sparse_ffn" ? " --m 64" : " --m 64 --n 64 --k 128";
  Ran r = run(lesson + size);
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("No CUDA GPU"), std::string::npos) << r.out;
  const std::string json = (fs::temp_directory_path() / ("wb-cli-" + std::to_string(getpid()) + ".json")).string();
  r = run(lesson + size + " --json " + json);
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_FALSE(fs::exists(json)) << "a results file was written without a GPU";
}

// Without a GPU a lesson shows the recording at the shape asked for, with the
// variants asked for; where nothing is recorded at that shape, it says so, names
// the shapes that are, and shows 4096^3.
TEST(LessonRecorded, ShowsTheShapeAndVariantsAskedFor) {
  if (gpu_present()) GTEST_SKIP() << "a GPU is present: the no-GPU path is not reachable here";
  if (!have("lesson03_grouped")) GTEST_SKIP() << "lesson03_grouped is not in this build (no CUDA)";
  Ran r = run("lesson03_grouped --m 8192 --n 8192 --k 8192 --variant row_major,grouped8");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("shape 8192 x 8192 x 8192"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("shape 4096 x 4096 x 4096"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("grouped8 "), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("grouped16 "), std::string::npos) << "a variant not asked for: " << r.out;
  r = run("lesson03_grouped --m 3000 --n 3000 --k 4096");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("Nothing is recorded for lesson03_grouped at 3000 x 3000 x 4096"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("shape 4096 x 4096 x 4096"), std::string::npos) << r.out;
}

// Among the recordings at a shape, the one with the run's own parameters is
// shown (lesson 08 records every sparsity at the same M, N and K); with a
// value nothing was recorded at, a line says which are.
TEST(LessonRecorded, PicksTheRecordingByTheLessonsParameters) {
  if (gpu_present()) GTEST_SKIP() << "a GPU is present: the no-GPU path is not reachable here";
  if (!have("lesson08_sparse_ffn")) GTEST_SKIP() << "lesson08_sparse_ffn is not in this build (no CUDA)";
  for (const char* s : {"0.5", "0.9"}) {
    const Ran r = run(std::string("lesson08_sparse_ffn --m 16 --sparsity ") + s);
    EXPECT_EQ(r.code, 0) << r.out;
    EXPECT_NE(r.out.find(std::string("model=llama2-7b sparsity=") + s + ","), std::string::npos) << s << ": " << r.out;
    EXPECT_EQ(r.out.find("Nothing is recorded"), std::string::npos) << r.out;
  }
  const Ran none = run("lesson08_sparse_ffn --m 16 --sparsity 0.3");
  EXPECT_EQ(none.code, 0) << none.out;
  EXPECT_NE(none.out.find("with model=llama2-7b sparsity=0.3 (recorded there: "), std::string::npos) << none.out;
  EXPECT_NE(none.out.find("model=llama2-7b sparsity=0.9;"), std::string::npos) << none.out;
}

// Lesson 05's recordings of the backward alone and of a training step sit at
// the same shape: each run shows its own (--part), never the other.
TEST(LessonRecorded, Lesson05ShowsTheRecordingOfItsPart) {
  if (gpu_present()) GTEST_SKIP() << "a GPU is present: the no-GPU path is not reachable here";
  if (!have("lesson05_backward")) GTEST_SKIP() << "lesson05_backward is not in this build (no CUDA)";
  const Ran train = run("lesson05_backward --part train");
  EXPECT_EQ(train.code, 0) << train.out;
  EXPECT_NE(train.out.find("part=train,"), std::string::npos) << train.out;
  EXPECT_EQ(train.out.find("part=all,"), std::string::npos) << train.out;
  const Ran all = run("lesson05_backward");
  EXPECT_EQ(all.code, 0) << all.out;
  EXPECT_NE(all.out.find("part=all,"), std::string::npos) << all.out;
  EXPECT_EQ(all.out.find("part=train,"), std::string::npos) << all.out;
}

INSTANTIATE_TEST_SUITE_P(Lessons, LessonCli, ::testing::ValuesIn(wb::lesson_ids()),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

// A problem's own parameters are checked before any GPU work, like the sizes.
TEST(ProblemParams, BadValuesAreOneLineAndExit2) {
  if (!have("harness_selftest")) GTEST_SKIP() << "harness_selftest is not in this build (no CUDA)";
  const char* bad[] = {"--scale abc", "--scale 9", "--scale ''", "--index-order backwards", "--m 100000 --n 100000"};
  for (const char* args : bad) {
    const Ran r = run(std::string("harness_selftest ") + args);
    EXPECT_EQ(r.code, 2) << args << ": " << r.out;
    EXPECT_EQ(lines(r.out), 1) << args << ": " << r.out;
  }
  const Ran help = run("harness_selftest --help");
  EXPECT_EQ(help.code, 0);
  EXPECT_NE(help.out.find("--index-order"), std::string::npos) << help.out;
  EXPECT_NE(help.out.find("sorted, shuffled"), std::string::npos) << help.out;
}

// Lesson 05's activation and bias are words: anything else is one line, exit 2.
TEST(ProblemParams, Lesson05ActivationIsOneOfThree) {
  if (!have("lesson05_backward")) GTEST_SKIP() << "lesson05_backward is not in this build (no CUDA)";
  for (const char* args : {"--act tanh", "--act ''", "--act RELU", "--bias maybe", "--part dz", "--part ''"}) {
    const Ran r = run(std::string("lesson05_backward ") + args);
    EXPECT_EQ(r.code, 2) << args << ": " << r.out;
    EXPECT_EQ(lines(r.out), 1) << args << ": " << r.out;
  }
  const Ran help = run("lesson05_backward --help");
  EXPECT_EQ(help.code, 0);
  EXPECT_NE(help.out.find("relu, gelu, silu"), std::string::npos) << help.out;
}

// Lesson 06's --split-k is a whole number from 0 (the wave model's choice) up.
TEST(ProblemParams, Lesson06SplitKIsAWholeNumber) {
  if (!have("lesson06_splitk")) GTEST_SKIP() << "lesson06_splitk is not in this build (no CUDA)";
  for (const char* args : {"--split-k -1", "--split-k x", "--split-k ''", "--split-k 2.5", "--split-k 1e9"}) {
    const Ran r = run(std::string("lesson06_splitk ") + args);
    EXPECT_EQ(r.code, 2) << args << ": " << r.out;
    EXPECT_EQ(lines(r.out), 1) << args << ": " << r.out;
    EXPECT_NE(r.out.find("--split-k"), std::string::npos) << args << ": " << r.out;
  }
  const Ran help = run("lesson06_splitk --help");
  EXPECT_EQ(help.code, 0);
  EXPECT_NE(help.out.find("wave model"), std::string::npos) << help.out;
}

// Lesson 07: K must be a multiple of the group size, and the group size one the
// kernels support; both one line and exit 2, before any GPU work.
TEST(ProblemParams, Lesson07GroupSizeIsCheckedFirst) {
  if (!have("lesson07_w4a16")) GTEST_SKIP() << "lesson07_w4a16 is not in this build (no CUDA)";
  const struct {
    const char* args;
    const char* says;
  } cases[] = {{"--k 100", "multiple of the group size"},      {"--k 4160 --group-size 128", "4160"},
               {"--group-size 16", "--group-size"},             {"--group-size 48", "--group-size"},
               {"--group-size x", "--group-size"},              {"--weights some", "--weights"},
               {"--k 96 --group-size 64", "multiple of the group size"}};
  for (const auto& c : cases) {
    const Ran r = run(std::string("lesson07_w4a16 ") + c.args);
    EXPECT_EQ(r.code, 2) << c.args << ": " << r.out;
    EXPECT_EQ(lines(r.out), 1) << c.args << ": " << r.out;
    EXPECT_NE(r.out.find(c.says), std::string::npos) << c.args << ": " << r.out;
  }
  const Ran help = run("lesson07_w4a16 --help");
  EXPECT_EQ(help.code, 0);
  EXPECT_NE(help.out.find("32, 64 or 128"), std::string::npos) << help.out;
}

// Lesson 08: sizes come from --model, and a bad index list is one line and
// exit 2 before any GPU work (out of range, repeated, not a number, no file).
TEST(ProblemParams, Lesson08IndicesAndSizesAreCheckedFirst) {
  if (!have("lesson08_sparse_ffn")) GTEST_SKIP() << "lesson08_sparse_ffn is not in this build (no CUDA)";
  const fs::path dir = fs::temp_directory_path() / ("wb-cli-08-" + std::to_string(getpid()));
  fs::create_directories(dir);
  const auto file = [&](const std::string& name, const std::string& text) {
    const fs::path p = dir / name;
    std::ofstream(p) << text;
    return p.string();
  };
  const std::string range = file("range.txt", "5 3 3072\n"), twice = file("twice.txt", "7, 1, 7"),
                    word = file("word.txt", "1 2 x3");
  const struct {
    std::string args;
    const char* says;
  } cases[] = {{"--n 512", "--model"},
               {"--k 100", "--model"},
               {"--model gpt3", "--model"},
               {"--sparsity 1.5", "--sparsity"},
               {"--sparsity -0.1", "--sparsity"},
               {"--model gpt2 --indices " + range, "outside [0, 3072)"},
               {"--model gpt2 --indices " + twice, "appears twice"},
               {"--model gpt2 --indices " + word, "not a whole number"},
               {"--model gpt2 --indices " + (dir / "missing.txt").string(), "cannot read"}};
  for (const auto& c : cases) {
    const Ran r = run("lesson08_sparse_ffn " + c.args);
    EXPECT_EQ(r.code, 2) << c.args << ": " << r.out;
    EXPECT_EQ(lines(r.out), 1) << c.args << ": " << r.out;
    EXPECT_NE(r.out.find(c.says), std::string::npos) << c.args << ": " << r.out;
  }
  fs::remove_all(dir);
}

// --ncu is checked before any GPU work: without Nsight Compute it is one line and exit 2.
TEST(LessonNcu, WithoutNsightComputeIsAUsageError) {
  if (!have("lesson03_grouped")) GTEST_SKIP() << "lesson03_grouped is not in this build (no CUDA)";
  if (!wb::find_ncu().empty()) GTEST_SKIP() << "ncu is installed here (the GPU check runs --ncu for real)";
  const Ran r = run("lesson03_grouped --ncu --m 64 --n 64 --k 64");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_EQ(lines(r.out), 1) << r.out;
  EXPECT_NE(r.out.find("ncu"), std::string::npos) << r.out;
}

}  // namespace
