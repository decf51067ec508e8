#include "model/playback.hpp"

#include <algorithm>

namespace wb::viewer {

void Playback::set_length(double length) {
  length_ = std::max(length, 0.0);
  position_ = std::clamp(position_, 0.0, length_);
}

void Playback::set_position(double position) { position_ = std::clamp(position, 0.0, length_); }

void Playback::play() {
  if (position_ >= length_) position_ = 0;
  playing_ = length_ > 0;
}

void Playback::step(double delta) {
  playing_ = false;
  set_position(position_ + delta);
}

void Playback::advance(double seconds) {
  if (!playing_) return;
  position_ += length_ / kSecondsPerReplay * speed_ * std::max(seconds, 0.0);
  if (position_ >= length_) {
    position_ = length_;
    playing_ = false;
  }
}

void Playback::set_speed(double speed) { speed_ = std::clamp(speed, 0.01, 100.0); }

}  // namespace wb::viewer
