// Stream-K for the last wave: which k tiles of which output tiles each block
// of a persistent grid computes.
//
// A persistent grid of W blocks ("workers") walks T output tiles, K_ITERS k
// tiles (BLOCK_K steps) each, W at a time. When T is not a multiple of W the
// last wave is partly empty: at T = 288 and W = 132 (3072 x 3072 in 128 x 256
// tiles on an H100) the third wave has 24 tiles, so 108 SMs idle for a third
// of the launch. Stream-K (Osama et al., 2023) cuts that remainder along K
// instead: the R = T % W leftover tiles are laid end to end as one run of
// R x K_ITERS k iterations, and each worker takes an equal contiguous share.
// The last wave then takes R / W of a tile-time on every SM instead of one
// tile-time on R of them. The price: a tile whose k iterations fall to two or
// more workers must be summed. Each worker that computes the END of a tile (a
// segment that does not start at k = 0) writes its fp32 partial sum to its own
// workspace slot and raises its flag; the worker that computes the tile's
// START (its "owner") waits for those flags, adds the partials and stores.
//
// The whole ("data-parallel") tiles come first, W at a time, then the shared
// ("Stream-K") run: every worker has the same number of whole tiles, so all
// reach the shared run together. A worker's share of the run is contiguous: at
// most the end of one tile (the only segment it does not own), whole tiles,
// and the start of another. The segment it does not own is always its first,
// so one workspace slot per worker suffices, and its owner is the worker
// before it, which reaches that tile at the END of its own share: by then the
// partial is long written, so owners rarely wait.
//
// When not to: blocks that share tiles are at different k at the same moment,
// so the blocks in flight no longer read the same k slices of A and B, and L2
// serves fewer of their loads; the fix-up reads and writes 128 KB per block.
// Measured on an H100 at 4096^3 (a last wave 88% full), sharing it was 8-14%
// SLOWER than leaving 16 SMs idle. So the plan shares the remainder only when
// the last wave is at most half full, where an idle SM costs more than that.
//
// Header-only, __host__ __device__: the kernel, the host launcher, the trace
// bookkeeping and the CPU tests use the same functions.
#pragma once

#include <cstdint>

#include "schedule/tile_order.hpp"

namespace wb {

struct StreamKPlan {
  int tiles = 0;     // output tiles, numbered in launch order
  int k_iters = 0;   // k tiles per output tile
  int workers = 0;   // persistent blocks
  int sk_tiles = 0;  // the last sk_tiles tiles are shared along K; the others are computed whole
  WB_HD int first_shared() const { return tiles - sk_tiles; }
};

// Share the remainder only where it pays: more tiles than workers (one partial
// wave has nothing to even out with), a last wave at most half full (see the
// file comment), and at least two k tiles per tile (one cannot be shared).
WB_HD StreamKPlan stream_k_plan(int tiles, int k_iters, int workers) {
  StreamKPlan p;
  p.tiles = tiles;
  p.k_iters = k_iters;
  p.workers = workers;
  const int remainder = workers > 0 ? tiles % workers : 0;
  if (tiles > workers && k_iters >= 2 && 2 * remainder <= workers) p.sk_tiles = remainder;
  return p;
}

// Every tile shared along K: for skinny products (lesson 06), whose few tiles
// leave most of the SMs idle in a data-parallel grid. Each worker takes an
// equal run of the tiles x k_iters iterations, a fraction of a tile when the
// workers outnumber the tiles.
WB_HD StreamKPlan stream_k_plan_all(int tiles, int k_iters, int workers) {
  StreamKPlan p;
  p.tiles = tiles;
  p.k_iters = k_iters;
  p.workers = workers;
  p.sk_tiles = tiles;
  return p;
}

// Worker w takes iterations [stream_k_begin(w), stream_k_begin(w + 1)) of the
// shared run (iteration i is k tile i % k_iters of tile first_shared() + i / k_iters).
WB_HD int64_t stream_k_begin(const StreamKPlan& p, int worker) {
  return int64_t(p.sk_tiles) * p.k_iters * worker / p.workers;
}

// One piece of work: k tiles [k_begin, k_end) of tile `tile` (launch order).
struct WorkUnit {
  int tile = 0;
  int k_begin = 0;
  int k_end = 0;
  int index = -1;  // position in the launch order over all workers' units (for traces), or -1
};

WB_HD bool whole_tile(const StreamKPlan& p, const WorkUnit& u) { return u.k_begin == 0 && u.k_end == p.k_iters; }
// The owner computes k = 0 of the tile: it adds the other segments' partials and stores.
WB_HD bool owns_tile(const WorkUnit& u) { return u.k_begin == 0; }

// Stream-K segments of the workers before `worker` (a loop over workers, with
// 64-bit divisions: for numbering trace records, not for the main loop).
WB_HD int stream_k_segments_before(const StreamKPlan& p, int worker) {
  int count = 0;
  for (int w = 0; w < worker; ++w) {
    const int64_t b = stream_k_begin(p, w), e = stream_k_begin(p, w + 1);
    if (e > b) count += int((e - 1) / p.k_iters - b / p.k_iters + 1);
  }
  return count;
}

// Work units of the whole launch: the whole tiles plus the shared run's segments.
WB_HD int stream_k_units(const StreamKPlan& p) { return p.first_shared() + stream_k_segments_before(p, p.workers); }

// The next worker after `after` whose share holds part of shared tile `tile`,
// or -1: the owner calls it from its own index to find the partials it must
// add. Workers with an empty share are skipped.
WB_HD int stream_k_next_contributor(const StreamKPlan& p, int tile, int after) {
  const int64_t tile_end = int64_t(tile - p.first_shared() + 1) * p.k_iters;
  for (int w = after + 1; w < p.workers; ++w) {
    const int64_t b = stream_k_begin(p, w);
    if (b >= tile_end) return -1;
    if (stream_k_begin(p, w + 1) > b) return w;
  }
  return -1;
}

// Walks one worker's units in order: its whole tiles worker, + workers, ...,
// then its segments of the shared run.
//   StreamKWalk walk(plan, worker);
//   for (WorkUnit u; walk.next(&u);) { ... }
// Units are numbered in launch order (WorkUnit::index, for traces): whole tile
// t is unit t, then the shared run's segments worker by worker. To number them,
// pass the worker's first segment index, stream_k_segments_before(plan,
// worker): a loop over the workers with 64-bit divisions, so a kernel gets it
// from the host.
class StreamKWalk {
 public:
  WB_HD StreamKWalk(const StreamKPlan& p, int worker, int segments_before = -1)
      : p_(p),
        whole_(worker),
        pos_(stream_k_begin(p, worker)),
        end_(stream_k_begin(p, worker + 1)),
        index_(segments_before >= 0 ? p.first_shared() + segments_before : -1) {}

  WB_HD bool next(WorkUnit* u) {
    if (whole_ < p_.first_shared()) {
      u->tile = whole_;
      u->k_begin = 0;
      u->k_end = p_.k_iters;
      u->index = index_ >= 0 ? whole_ : -1;
      whole_ += p_.workers;
      return true;
    }
    if (pos_ < end_) {
      const int shared = int(pos_ / p_.k_iters);
      const int64_t tile_begin = int64_t(shared) * p_.k_iters;
      const int64_t stop = end_ < tile_begin + p_.k_iters ? end_ : tile_begin + p_.k_iters;
      u->tile = p_.first_shared() + shared;
      u->k_begin = int(pos_ - tile_begin);
      u->k_end = int(stop - tile_begin);
      u->index = index_ >= 0 ? index_++ : -1;
      pos_ = stop;
      return true;
    }
    return false;
  }

 private:
  StreamKPlan p_;
  int whole_;          // its next whole tile
  int64_t pos_, end_;  // the rest of its share of the shared run
  int index_;          // the next segment's index, or -1
};

}  // namespace wb
