// A model of L2 reuse: replay the operand blocks that a tile order asks for and
// count what an LRU cache of the GPU's L2 size would serve.
//
// Unit of traffic: one A block (BLOCK_M x BLOCK_K) or one B block (BLOCK_K x BLOCK_N).
// Blocks in flight: a wave of `blocks_in_flight` tiles (SMs x resident blocks per SM)
// runs together; inside a wave the tiles step through k in lockstep, each step
// asking for A(tile.m, k) then B(tile.n, k). Real blocks drift apart, so this is a
// model: it shows how the order changes what the blocks in flight share, which is
// what decides DRAM traffic once the operands no longer fit in L2.
//
// The Triton tutorial's example: a 9x9 tile grid with 9 k-steps, the first 9 tiles
// in flight, a cache large enough: row-major loads 90 blocks, grouped (GROUP_M 3) 54.
#pragma once

#include <cstdint>
#include <list>
#include <unordered_map>
#include <vector>

#include "schedule/tile_order.hpp"

namespace wb {

struct L2ModelInput {
  int tiles_m = 1;             // output tile rows
  int tiles_n = 1;             // output tile columns
  int k_steps = 1;             // BLOCK_K steps along K
  int64_t a_block_bytes = 0;   // bytes of one A block (BLOCK_M x BLOCK_K)
  int64_t b_block_bytes = 0;   // bytes of one B block (BLOCK_K x BLOCK_N)
  int64_t l2_bytes = 0;        // cache capacity
  int blocks_in_flight = 1;    // tiles resident at once (one wave)
  TileOrder order = TileOrder::row_major;
  int group_m = 8;             // for TileOrder::grouped
  int64_t max_tiles = -1;      // replay only the first max_tiles tiles (-1: all)
};

struct L2WaveStats {
  int64_t hits = 0;
  int64_t misses = 0;
  double hit_rate() const { return hits + misses ? double(hits) / double(hits + misses) : 0.0; }
};

struct L2ModelResult {
  int64_t hits = 0;
  int64_t misses = 0;            // blocks loaded from DRAM
  int64_t a_misses = 0;
  int64_t b_misses = 0;
  int64_t dram_bytes = 0;        // bytes those misses move
  int64_t compulsory_bytes = 0;  // every block of A and B read once (the floor)
  std::vector<L2WaveStats> waves;
  double hit_rate() const { return hits + misses ? double(hits) / double(hits + misses) : 0.0; }
};

// An LRU cache measured in bytes; keys are operand blocks.
class LruCache {
 public:
  explicit LruCache(int64_t capacity_bytes) : capacity_(capacity_bytes) {}
  // Returns true on a hit. On a miss the block is inserted, evicting the least
  // recently used blocks until it fits.
  bool access(uint64_t key, int64_t bytes);
  int64_t used_bytes() const { return used_; }
  void clear();

 private:
  struct Entry { uint64_t key; int64_t bytes; };
  int64_t capacity_;
  int64_t used_ = 0;
  std::list<Entry> lru_;  // front: most recent
  std::unordered_map<uint64_t, std::list<Entry>::iterator> where_;
};

// Keys for operand blocks: which operand, its tile row/column, its k-step.
inline uint64_t a_block_key(int tile_m, int k) { return (uint64_t(0) << 63) | (uint64_t(uint32_t(tile_m)) << 31) | uint32_t(k); }
inline uint64_t b_block_key(int tile_n, int k) { return (uint64_t(1) << 63) | (uint64_t(uint32_t(tile_n)) << 31) | uint32_t(k); }

// One operand access in replay order.
struct L2Access {
  int64_t wave;      // which wave of blocks in flight
  int64_t tile_pid;  // program id of the tile asking
  TileCoord tile;
  int k;             // k-step
  bool is_a;         // A block (else B block)
};

// Calls visit(const L2Access&) for every access of the replay, in order.
template <class Visit>
void for_each_l2_access(const L2ModelInput& in, Visit&& visit) {
  const int64_t total = int64_t(in.tiles_m) * in.tiles_n;
  const int64_t tiles = in.max_tiles >= 0 && in.max_tiles < total ? in.max_tiles : total;
  const int64_t wave_size = in.blocks_in_flight > 0 ? in.blocks_in_flight : 1;
  for (int64_t first = 0, wave = 0; first < tiles; first += wave_size, ++wave) {
    const int64_t last = first + wave_size < tiles ? first + wave_size : tiles;
    for (int k = 0; k < in.k_steps; ++k) {
      for (int64_t pid = first; pid < last; ++pid) {
        const TileCoord t = tile_of(in.order, int(pid), in.tiles_m, in.tiles_n, in.group_m);
        visit(L2Access{wave, pid, t, k, true});
        visit(L2Access{wave, pid, t, k, false});
      }
    }
  }
}

L2ModelResult simulate_l2(const L2ModelInput& in);

// Number of waves the replay has (tiles over blocks in flight, rounded up).
int64_t l2_wave_count(const L2ModelInput& in);

}  // namespace wb
