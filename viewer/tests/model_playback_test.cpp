#include <gtest/gtest.h>

#include "model/playback.hpp"
#include "model/tile_grid.hpp"

namespace wb::viewer {
namespace {

TEST(ViewerPlayback, StepsAndStopsAtTheEnds) {
  Playback p;
  p.set_length(10);
  p.play();
  EXPECT_TRUE(p.playing());
  p.step(1);
  EXPECT_FALSE(p.playing()) << "a step pauses";
  EXPECT_DOUBLE_EQ(p.position(), 1);
  p.step(-5);
  EXPECT_DOUBLE_EQ(p.position(), 0);
  p.step(100);
  EXPECT_DOUBLE_EQ(p.position(), 10);
}

TEST(ViewerPlayback, AdvanceFollowsSpeedAndStopsAtTheEnd) {
  Playback p;
  p.set_length(100);
  p.advance(1.0);
  EXPECT_DOUBLE_EQ(p.position(), 0) << "paused playback does not move";
  p.play();
  p.advance(1.0);
  EXPECT_NEAR(p.position(), 100 / Playback::kSecondsPerReplay, 1e-9);
  p.set_speed(2.0);
  p.advance(1.0);
  EXPECT_NEAR(p.position(), 3 * 100 / Playback::kSecondsPerReplay, 1e-9);
  p.advance(1000.0);
  EXPECT_DOUBLE_EQ(p.position(), 100);
  EXPECT_FALSE(p.playing());
  p.play();
  EXPECT_DOUBLE_EQ(p.position(), 0) << "play at the end starts again";
}

TEST(ViewerTileGrid, ModelledStatesSlideAWindowOfBlocksInFlight) {
  TileGridSetup s;
  s.m = s.n = 4 * 128;
  s.order = TileOrder::row_major;
  EXPECT_EQ(s.tile_count(), 16);
  EXPECT_DOUBLE_EQ(modelled_replay_length(s, 3), 19);
  auto states = modelled_tile_states(s, 5.0, 3);
  int done = 0, running = 0;
  for (TileState t : states) {
    done += t == TileState::done;
    running += t == TileState::in_flight;
  }
  EXPECT_EQ(done, 2);
  EXPECT_EQ(running, 3);
  EXPECT_EQ(states[0], TileState::done);
  EXPECT_EQ(states[4], TileState::in_flight);  // pid 4 = tile (1, 0) in row-major order
  states = modelled_tile_states(s, modelled_replay_length(s, 3), 3);
  for (TileState t : states) EXPECT_EQ(t, TileState::done);
}

// Every pid maps to a distinct tile for every order and GROUP_M on small grids.
TEST(ViewerTileGrid, PidOfTilesIsAPermutation) {
  for (int tm = 1; tm <= 9; ++tm)
    for (int tn = 1; tn <= 9; ++tn)
      for (int order = 0; order < kTileOrderCount; ++order)
        for (int g = 1; g <= 10; ++g) {
          TileGridSetup s;
          s.m = tm * 16;
          s.n = tn * 16;
          s.block_m = s.block_n = 16;
          s.order = TileOrder(order);
          s.group_m = g;
          const auto pids = s.pid_of_tiles();
          std::vector<int> seen(pids.size(), 0);
          for (int64_t p : pids) {
            ASSERT_GE(p, 0);
            ++seen[size_t(p)];
          }
          for (int c : seen) ASSERT_EQ(c, 1);
        }
}

TEST(ViewerTileGrid, OperandUseOfGroupedWaveIsSmallerThanRowMajor) {
  TileGridSetup s;
  s.m = s.n = 9 * 64;
  s.block_m = s.block_n = 64;
  s.order = TileOrder::row_major;
  const OperandUse row = operand_use(s, modelled_tile_states(s, 9, 9));
  EXPECT_EQ(row.a_count, 1);
  EXPECT_EQ(row.b_count, 9);
  s.order = TileOrder::grouped;
  s.group_m = 3;
  const OperandUse grouped = operand_use(s, modelled_tile_states(s, 9, 9));
  EXPECT_EQ(grouped.a_count, 3);
  EXPECT_EQ(grouped.b_count, 3);
}

TEST(ViewerTileGrid, ClampKeepsTheGridDrawable) {
  TileGridSetup s;
  s.m = s.n = 1 << 17;
  s.block_m = s.block_n = 1;
  s.clamp();
  EXPECT_LE(s.tile_count(), 65536);
}

}  // namespace
}  // namespace wb::viewer
