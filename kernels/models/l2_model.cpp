#include "models/l2_model.hpp"

#include <cstddef>

namespace wb {

bool LruCache::access(uint64_t key, int64_t bytes) {
  auto it = where_.find(key);
  if (it != where_.end()) {
    lru_.splice(lru_.begin(), lru_, it->second);
    return true;
  }
  if (bytes > capacity_) return false;  // never fits: always a miss, nothing kept
  while (used_ + bytes > capacity_ && !lru_.empty()) {
    used_ -= lru_.back().bytes;
    where_.erase(lru_.back().key);
    lru_.pop_back();
  }
  lru_.push_front(Entry{key, bytes});
  where_[key] = lru_.begin();
  used_ += bytes;
  return false;
}

void LruCache::clear() {
  lru_.clear();
  where_.clear();
  used_ = 0;
}

int64_t l2_wave_count(const L2ModelInput& in) {
  const int64_t total = int64_t(in.tiles_m) * in.tiles_n;
  const int64_t tiles = in.max_tiles >= 0 && in.max_tiles < total ? in.max_tiles : total;
  const int64_t wave_size = in.blocks_in_flight > 0 ? in.blocks_in_flight : 1;
  return (tiles + wave_size - 1) / wave_size;
}

L2ModelResult simulate_l2(const L2ModelInput& in) {
  L2ModelResult r;
  r.waves.resize(std::size_t(l2_wave_count(in)));
  r.compulsory_bytes = int64_t(in.tiles_m) * in.k_steps * in.a_block_bytes +
                       int64_t(in.tiles_n) * in.k_steps * in.b_block_bytes;
  LruCache cache(in.l2_bytes);
  for_each_l2_access(in, [&](const L2Access& acc) {
    const int64_t bytes = acc.is_a ? in.a_block_bytes : in.b_block_bytes;
    const uint64_t key = acc.is_a ? a_block_key(acc.tile.m, acc.k) : b_block_key(acc.tile.n, acc.k);
    L2WaveStats& w = r.waves[std::size_t(acc.wave)];
    if (cache.access(key, bytes)) {
      ++r.hits;
      ++w.hits;
    } else {
      ++r.misses;
      ++w.misses;
      (acc.is_a ? r.a_misses : r.b_misses) += 1;
      r.dram_bytes += bytes;
    }
  });
  return r;
}

}  // namespace wb
