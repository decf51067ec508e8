#include "ui/canvas_texture.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include <GLFW/glfw3.h>  // the platform's OpenGL header

namespace wb::viewer::ui {

namespace {

// ImU32's byte order in memory, as the texture upload reads it.
#ifdef IMGUI_USE_BGRA_PACKED_COLOR
constexpr GLenum kPixelFormat = GL_BGRA;
#else
constexpr GLenum kPixelFormat = GL_RGBA;
#endif

void disable_blending(const ImDrawList*, const ImDrawCmd*) { glDisable(GL_BLEND); }

}  // namespace

void CanvasTexture::begin(int width, int height, ImU32 background) {
  width_ = std::max(width, 0);
  height_ = std::max(height, 0);
  pixels_.assign(size_t(width_) * size_t(height_), background | IM_COL32_A_MASK);
}

void CanvasTexture::fill_rect(float x0, float y0, float x1, float y1, ImU32 colour) {
  // Pixel i is inside when x0 <= i + 0.5 < x1: OpenGL's rule for pixel centres.
  // Clamped as floats first: a zoomed-in view puts far edges beyond any int.
  auto first_inside = [](float edge, int size) { return int(std::clamp(std::ceil(edge - 0.5f), 0.0f, float(size))); };
  const int i0 = first_inside(x0, width_), i1 = first_inside(x1, width_);
  const int j0 = first_inside(y0, height_), j1 = first_inside(y1, height_);
  for (int j = j0; j < j1; ++j) {
    uint32_t* row = pixels_.data() + size_t(j) * size_t(width_);
    std::fill(row + i0, row + std::max(i0, i1), colour | IM_COL32_A_MASK);
  }
}

void CanvasTexture::draw(ImDrawList* dl, ImVec2 top_left) {
  if (width_ == 0 || height_ == 0) return;
  GLint bound = 0;
  glGetIntegerv(GL_TEXTURE_BINDING_2D, &bound);
  if (texture_ == 0) {
    GLuint name = 0;
    glGenTextures(1, &name);
    texture_ = name;
    glBindTexture(GL_TEXTURE_2D, texture_);
    // One texel per pixel: nearest keeps the bars' edges exact.
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, GL_NEAREST);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, GL_NEAREST);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_S, GL_CLAMP_TO_EDGE);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_T, GL_CLAMP_TO_EDGE);
  }
  // A view that did not move draws the same picture: no upload then.
  if (width_ != texture_w_ || height_ != texture_h_ || pixels_ != shown_) {
    glBindTexture(GL_TEXTURE_2D, texture_);
    if (width_ != texture_w_ || height_ != texture_h_) {
      glTexImage2D(GL_TEXTURE_2D, 0, GL_RGBA8, width_, height_, 0, kPixelFormat, GL_UNSIGNED_BYTE, pixels_.data());
      texture_w_ = width_;
      texture_h_ = height_;
    } else {
      glTexSubImage2D(GL_TEXTURE_2D, 0, 0, 0, width_, height_, kPixelFormat, GL_UNSIGNED_BYTE, pixels_.data());
    }
    pixels_.swap(shown_);
  }
  glBindTexture(GL_TEXTURE_2D, GLuint(bound));
  // Opaque texels need no blending, and blending reads every pixel back.
  dl->AddCallback(disable_blending, nullptr);
  dl->AddImage((ImTextureID)(intptr_t)texture_, top_left,  // the OpenGL backend's texture id is the GL name
               ImVec2(top_left.x + float(width_), top_left.y + float(height_)));
  dl->AddCallback(ImDrawCallback_ResetRenderState, nullptr);  // blending back on for what follows
}

void CanvasTexture::release() {
  if (texture_ != 0) {
    GLuint name = texture_;
    glDeleteTextures(1, &name);
  }
  texture_ = 0;
  texture_w_ = texture_h_ = 0;
  shown_.clear();
}

}  // namespace wb::viewer::ui
