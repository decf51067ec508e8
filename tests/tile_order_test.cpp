// Exhaustive tests of the program-id-to-tile orders: every order is a bijection
// over the tiles for every grid up to 40 x 40 and GROUP_M 1..12, and grouped
// equals the Triton tutorial's formula written out independently here.
#include <gtest/gtest.h>

#include <vector>

#include "schedule/tile_order.hpp"

namespace {

using namespace wb;

// The Triton tutorial's grouped order, transcribed line by line.
TileCoord triton_grouped(int pid, int num_pid_m, int num_pid_n, int GROUP_SIZE_M) {
  int num_pid_in_group = GROUP_SIZE_M * num_pid_n;
  int group_id = pid / num_pid_in_group;
  int first_pid_m = group_id * GROUP_SIZE_M;
  int group_size_m = std::min(num_pid_m - first_pid_m, GROUP_SIZE_M);
  int pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m);
  int pid_n = (pid % num_pid_in_group) / group_size_m;
  return {pid_m, pid_n};
}

void expect_bijection(TileOrder order, int tm, int tn, int g) {
  std::vector<int> seen(size_t(tm) * tn, 0);
  for (int pid = 0; pid < tm * tn; ++pid) {
    const TileCoord t = tile_of(order, pid, tm, tn, g);
    ASSERT_GE(t.m, 0);
    ASSERT_LT(t.m, tm) << tile_order_name(order) << " pid " << pid << " grid " << tm << "x" << tn << " g " << g;
    ASSERT_GE(t.n, 0);
    ASSERT_LT(t.n, tn) << tile_order_name(order) << " pid " << pid << " grid " << tm << "x" << tn << " g " << g;
    ASSERT_EQ(seen[size_t(t.m) * tn + t.n]++, 0) << tile_order_name(order) << ": tile (" << t.m << "," << t.n
                                                 << ") taken twice, grid " << tm << "x" << tn << " g " << g;
  }
}

TEST(TileOrder, EveryOrderIsABijectionUpTo40x40) {
  for (int tm = 1; tm <= 40; ++tm)
    for (int tn = 1; tn <= 40; ++tn) {
      expect_bijection(TileOrder::row_major, tm, tn, 1);
      expect_bijection(TileOrder::column_major, tm, tn, 1);
      for (int g = 1; g <= 12; ++g) expect_bijection(TileOrder::grouped, tm, tn, g);
    }
}

TEST(TileOrder, GroupedEqualsTritonFormulaIncludingShortLastGroup) {
  for (int tm = 1; tm <= 40; ++tm)
    for (int tn = 1; tn <= 40; ++tn)
      for (int g = 1; g <= 12; ++g)
        for (int pid = 0; pid < tm * tn; ++pid) {
          const TileCoord a = grouped_tile(pid, tm, tn, g), b = triton_grouped(pid, tm, tn, g);
          ASSERT_EQ(a.m, b.m) << "pid " << pid << " grid " << tm << "x" << tn << " g " << g;
          ASSERT_EQ(a.n, b.n) << "pid " << pid << " grid " << tm << "x" << tn << " g " << g;
        }
}

TEST(TileOrder, RowAndColumnMajorWalkTheExpectedWay) {
  EXPECT_EQ(row_major_tile(5, 3, 4).m, 1);
  EXPECT_EQ(row_major_tile(5, 3, 4).n, 1);
  EXPECT_EQ(column_major_tile(5, 3, 4).m, 2);
  EXPECT_EQ(column_major_tile(5, 3, 4).n, 1);
  // Grouped with GROUP_M 2 on a 3 x 3 grid: down two rows, then right; the last group is one row.
  const int expect[9][2] = {{0, 0}, {1, 0}, {0, 1}, {1, 1}, {0, 2}, {1, 2}, {2, 0}, {2, 1}, {2, 2}};
  for (int pid = 0; pid < 9; ++pid) {
    EXPECT_EQ(grouped_tile(pid, 3, 3, 2).m, expect[pid][0]) << pid;
    EXPECT_EQ(grouped_tile(pid, 3, 3, 2).n, expect[pid][1]) << pid;
  }
  // GROUP_M 1 is row-major; GROUP_M >= tiles_m is column-major.
  for (int pid = 0; pid < 35; ++pid) {
    EXPECT_EQ(grouped_tile(pid, 5, 7, 1).m, row_major_tile(pid, 5, 7).m);
    EXPECT_EQ(grouped_tile(pid, 5, 7, 1).n, row_major_tile(pid, 5, 7).n);
    EXPECT_EQ(grouped_tile(pid, 5, 7, 5).m, column_major_tile(pid, 5, 7).m);
    EXPECT_EQ(grouped_tile(pid, 5, 7, 9).n, column_major_tile(pid, 5, 7).n);
  }
}

TEST(TileOrder, NamesRoundTrip) {
  for (int i = 0; i < kTileOrderCount; ++i) {
    TileOrder parsed{};
    ASSERT_TRUE(parse_tile_order(tile_order_name(TileOrder(i)), &parsed));
    EXPECT_EQ(int(parsed), i);
  }
  TileOrder parsed{};
  EXPECT_FALSE(parse_tile_order("grouped8", &parsed));
  EXPECT_FALSE(parse_tile_order("row", &parsed));
  EXPECT_FALSE(parse_tile_order("", &parsed));
}

}  // namespace

namespace {

// Lesson 04's cluster pairs: the pairs' tiles inside the matrix are every tile
// once, and cluster_tile_position numbers them 0 .. tiles - 1 in launch order
// (unit by unit, rank 0 before rank 1), skipping the tiles past M.
TEST(TileOrder, ClusterPairsCoverEveryTileAndNumberThemInLaunchOrder) {
  for (int tm = 1; tm <= 30; ++tm)
    for (int tn = 1; tn <= 30; ++tn)
      for (int g = 1; g <= 9; ++g) {
        const int units = ceil_div(tm, 2) * tn;
        std::vector<int> seen(size_t(tm) * tn, 0);
        int expected_position = 0;
        for (int unit = 0; unit < units; ++unit)
          for (int rank = 0; rank < 2; ++rank) {
            const TileCoord t = cluster_pair_tile(unit, rank, tm, tn, g);
            ASSERT_LT(t.n, tn);
            if (t.m >= tm) {
              ASSERT_EQ(rank, 1) << "only a pair's second tile may lie past M";
              continue;
            }
            ASSERT_EQ(seen[size_t(t.m) * tn + t.n]++, 0) << "tile taken twice, grid " << tm << "x" << tn << " g " << g;
            ASSERT_EQ(cluster_tile_position(unit, rank, tm, tn, g), expected_position++)
                << "grid " << tm << "x" << tn << " g " << g << " unit " << unit << " rank " << rank;
          }
        ASSERT_EQ(expected_position, tm * tn);
      }
}

}  // namespace
