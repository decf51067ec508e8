#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "harness/options.hpp"

namespace {

using namespace wb;

ParseOutcome parse(std::vector<std::string> args, LessonOptions& opt, std::string& msg) {
  args.insert(args.begin(), "lesson");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  return parse_lesson_options("lesson", "test", int(argv.size()), argv.data(), opt, msg);
}

TEST(Options, DefaultsAndValues) {
  LessonOptions o;
  std::string msg;
  ASSERT_EQ(parse({}, o, msg), ParseOutcome::run) << msg;
  EXPECT_EQ(o.m, 4096);
  EXPECT_EQ(o.rounds, 3);
  ASSERT_EQ(parse({"--m", "127", "--n=257", "--k", "129", "--variant", "a,b", "--variant", "c", "--reps", "5",
                   "--json", "r.json", "--trace", "t.json", "--no-check", "--device", "1", "--seed", "9"},
                  o, msg),
            ParseOutcome::run)
      << msg;
  EXPECT_EQ(o.m, 127);
  EXPECT_EQ(o.n, 257);
  EXPECT_EQ(o.k, 129);
  EXPECT_EQ(o.variants, (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(o.reps, 5);
  EXPECT_TRUE(o.no_check);
  EXPECT_EQ(o.device, 1);
  EXPECT_EQ(o.seed, 9u);
}

TEST(Options, BadInputIsOneLineUsageError) {
  const std::vector<std::vector<std::string>> bad = {
      {"--m", "0"},         {"--n", "-3"},        {"--k", "abc"},          {"--m", "99999999999"},
      {"--m", "1.5"},       {"--reps", "0"},      {"--device", "-1"},      {"--bogus"},
      {"--m"},              {"--rounds", "0"},    {"--json", "x", "--trace", "x"},
      {"--variant", ""},    {"stray"},
  };
  for (const auto& args : bad) {
    LessonOptions o;
    std::string msg;
    std::string joined;
    for (const auto& a : args) joined += a + " ";
    EXPECT_EQ(parse(args, o, msg), ParseOutcome::usage_error) << joined;
    EXPECT_FALSE(msg.empty()) << joined;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << joined << ": " << msg;
  }
}

TEST(Options, HelpIsNotAnError) {
  LessonOptions o;
  std::string msg;
  EXPECT_EQ(parse({"--help"}, o, msg), ParseOutcome::done);
  EXPECT_NE(msg.find("--variant"), std::string::npos);
}

TEST(Options, TracePathsPerVariant) {
  EXPECT_EQ(trace_path_for("t.json", "grouped", false), "t.json");
  EXPECT_EQ(trace_path_for("out/t.json", "grouped", true), "out/t.grouped.json");
  EXPECT_EQ(trace_path_for("out.d/t", "x", true), "out.d/t.x");
  EXPECT_EQ(perfetto_path_for("t.grouped.json"), "t.grouped.perfetto.json");
  EXPECT_EQ(perfetto_path_for("t"), "t.perfetto.json");
  // Compressed traces keep ".json.gz" at the end.
  EXPECT_EQ(trace_path_for("out/t.json.gz", "grouped", true), "out/t.grouped.json.gz");
  EXPECT_EQ(perfetto_path_for("t.grouped.json.gz"), "t.grouped.perfetto.json.gz");
}

}  // namespace
