// Lesson 08's host side: the router's index list (drawn, parsed, checked).
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "schedule/sparse_ffn.hpp"

namespace {

using namespace wb::ffn;

TEST(SparseFfn, ActiveCountFollowsSparsity) {
  EXPECT_EQ(active_count(11008, 0.0), 11008);
  EXPECT_EQ(active_count(11008, 0.5), 5504);
  EXPECT_EQ(active_count(11008, 0.75), 2752);
  EXPECT_EQ(active_count(11008, 0.9), 1101);
  EXPECT_EQ(active_count(3072, 1.0), 0);
}

TEST(SparseFfn, DrawIsDistinctInRangeSeededAndUnsorted) {
  const std::vector<int32_t> a = draw_active(3072, 768, 7), b = draw_active(3072, 768, 7), c = draw_active(3072, 768, 8);
  ASSERT_EQ(a.size(), 768u);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  EXPECT_EQ(check_active(a, 3072), "");
  EXPECT_EQ(std::set<int32_t>(a.begin(), a.end()).size(), a.size());
  EXPECT_FALSE(std::is_sorted(a.begin(), a.end()));
  const std::vector<int32_t> all = draw_active(100, 100, 3);
  EXPECT_EQ(std::set<int32_t>(all.begin(), all.end()).size(), 100u);
}

TEST(SparseFfn, CheckNamesTheBadEntry) {
  EXPECT_EQ(check_active({3, 1, 2}, 4), "");
  EXPECT_NE(check_active({3, 4}, 4).find("index 4 (entry 1) is outside [0, 4)"), std::string::npos);
  EXPECT_NE(check_active({-1}, 4).find("outside"), std::string::npos);
  EXPECT_NE(check_active({2, 0, 2}, 4).find("index 2 appears twice (entries 0 and 2)"), std::string::npos);
}

TEST(SparseFfn, ParseTakesSpacesCommasAndNewlines) {
  std::vector<int32_t> v;
  EXPECT_EQ(parse_active("5, 3\n9\t1 ", v), "");
  EXPECT_EQ(v, (std::vector<int32_t>{5, 3, 9, 1}));
  EXPECT_EQ(parse_active("", v), "");
  EXPECT_TRUE(v.empty());
  EXPECT_NE(parse_active("1 2.5", v).find("'2.5' is not a whole number"), std::string::npos);
  EXPECT_NE(parse_active("99999999999", v).find("not a whole number"), std::string::npos);
}

TEST(SparseFfn, ModelsAndPadding) {
  ASSERT_NE(find_model("llama2-7b-swiglu"), nullptr);
  EXPECT_TRUE(find_model("llama2-7b-swiglu")->swiglu);
  EXPECT_EQ(up_columns_per_neuron(*find_model("llama2-7b-swiglu")), 2);
  EXPECT_EQ(find_model("gpt2")->d_ff, 3072);
  EXPECT_EQ(find_model("gpt3"), nullptr);
  EXPECT_EQ(compact_ld(0), 0);
  EXPECT_EQ(compact_ld(1), 64);
  EXPECT_EQ(compact_ld(1101), 1152);
}

}  // namespace
