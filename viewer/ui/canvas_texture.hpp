// An opaque picture drawn on the CPU and shown as one OpenGL texture. For
// thousands of thin rectangles this is much cheaper on a software renderer
// (llvmpipe): each pixel is shaded once, in whole tiles and without blending,
// instead of in the partly covered 4x4 blocks of every rectangle's triangles.
#pragma once

#include <cstdint>
#include <vector>

#include <imgui.h>

namespace wb::viewer::ui {

class CanvasTexture {
 public:
  CanvasTexture() = default;
  CanvasTexture(const CanvasTexture&) = delete;
  CanvasTexture& operator=(const CanvasTexture&) = delete;

  // Starts a new picture of width x height pixels, all `background` (opaque).
  void begin(int width, int height, ImU32 background);
  // Fills the pixels whose centres lie in [x0, x1) x [y0, y1) with an opaque
  // colour, as OpenGL fills a rectangle: the picture matches a draw-list one.
  void fill_rect(float x0, float y0, float x1, float y1, ImU32 colour);
  // Uploads the picture when it changed and adds it to the draw list, its
  // top-left pixel at `top_left` (whole pixels, so texels land on pixels).
  // It replaces what is under it: blending is off while it is drawn.
  void draw(ImDrawList* dl, ImVec2 top_left);
  // Frees the texture; needs the GL context that drew it to be current.
  void release();

 private:
  std::vector<uint32_t> pixels_;  // ImU32 colours, row by row from the top
  std::vector<uint32_t> shown_;   // what the texture holds now
  int width_ = 0, height_ = 0;
  unsigned texture_ = 0;          // GL texture name; 0 until first drawn
  int texture_w_ = 0, texture_h_ = 0;
};

}  // namespace wb::viewer::ui
