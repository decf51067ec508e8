// Play, pause, step and speed for a replay, in whatever unit the replay counts:
// launches for the modelled tile order, nanoseconds for a trace. The UI calls
// advance() once a frame with the frame's duration; nothing here knows ImGui.
#pragma once

namespace wb::viewer {

class Playback {
 public:
  // At speed 1 a whole replay takes this long, whatever its length.
  static constexpr double kSecondsPerReplay = 10.0;

  void set_length(double length);
  double length() const { return length_; }
  double position() const { return position_; }
  void set_position(double position);
  double fraction() const { return length_ > 0 ? position_ / length_ : 0.0; }

  bool playing() const { return playing_; }
  void play();  // from the start again when at the end
  void pause() { playing_ = false; }
  void toggle() { playing_ ? pause() : play(); }
  void rewind() { position_ = 0; }

  // Moves by `delta` (one launch, or to the next traced event) and pauses.
  void step(double delta);

  // Advances by the time a frame took; stops at the end.
  void advance(double seconds);

  double speed() const { return speed_; }
  void set_speed(double speed);

 private:
  double length_ = 0;
  double position_ = 0;
  double speed_ = 1.0;
  bool playing_ = false;
};

}  // namespace wb::viewer
