// Lesson 08's host side: the models' FFN sizes, the router's index list I of
// active intermediate neurons (drawn from --sparsity, or read from a file),
// and its checks. Host only: the lesson, the fill and the CPU tests share it.
//
// A model's FFN is Y = act(X W1[:, I]) W2[I, :] with X (M x d_model), W1
// (d_model x d_ff), W2 (d_ff x d_model); the SwiGLU form has a gate and an up
// matrix, Y = (silu(X Wg[:, I]) * (X Wu[:, I])) W2[I, :]. The gathered
// products see "columns" of the up side: one per active neuron, or two
// (gate, up) side by side for SwiGLU, so that a thread's accumulator pair
// holds a neuron's gate and up values together.
#pragma once

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "schedule/activation.hpp"

namespace wb::ffn {

struct Model {
  const char* name;
  int d_model, d_ff;
  Activation act;  // silu for the SwiGLU form (the gate's)
  bool swiglu;
  const char* what;
};

inline const std::vector<Model>& models() {
  static const std::vector<Model> all = {
      {"gpt2", 768, 3072, Activation::gelu, false, "GPT-2: d_model 768, d_ff 3072, GELU (tanh form)"},
      {"llama2-7b", 4096, 11008, Activation::silu, false, "Llama-2-7B sizes, two matrices: d_model 4096, d_ff 11008, SiLU"},
      {"llama2-7b-swiglu", 4096, 11008, Activation::silu, true,
       "Llama-2-7B as it is: SwiGLU, silu(X Wg) * (X Wu), then W2"},
  };
  return all;
}

inline const Model* find_model(const std::string& name) {
  for (const Model& m : models())
    if (name == m.name) return &m;
  return nullptr;
}

// Neurons left active at sparsity s: d_ff - round(s d_ff).
inline int active_count(int d_ff, double sparsity) {
  const int off = int(sparsity * d_ff + 0.5);
  return d_ff - std::min(off, d_ff);
}

// `count` distinct neurons of d_ff, drawn at random from `seed`, in the random
// order they were drawn (a router need not sort them, and the kernels do not).
inline std::vector<int32_t> draw_active(int d_ff, int count, uint64_t seed) {
  std::vector<int32_t> all(static_cast<size_t>(d_ff));
  for (int i = 0; i < d_ff; ++i) all[size_t(i)] = i;
  std::mt19937_64 rng(seed * 0x9E3779B97F4A7C15ull + 0x1F0Eull);
  for (int i = 0; i < count; ++i) {  // partial Fisher-Yates: the first `count` are the draw
    std::uniform_int_distribution<int> pick(i, d_ff - 1);
    std::swap(all[size_t(i)], all[size_t(pick(rng))]);
  }
  all.resize(static_cast<size_t>(count));
  return all;
}

// "" when every index is in [0, d_ff) and none repeats; else the one-line reason.
inline std::string check_active(const std::vector<int32_t>& idx, int d_ff) {
  std::vector<int32_t> seen(static_cast<size_t>(d_ff), -1);
  for (size_t p = 0; p < idx.size(); ++p) {
    const int32_t i = idx[p];
    if (i < 0 || i >= d_ff)
      return "index " + std::to_string(i) + " (entry " + std::to_string(p) + ") is outside [0, " +
             std::to_string(d_ff) + ")";
    if (seen[size_t(i)] >= 0)
      return "index " + std::to_string(i) + " appears twice (entries " + std::to_string(seen[size_t(i)]) + " and " +
             std::to_string(p) + ")";
    seen[size_t(i)] = int32_t(p);
  }
  return "";
}

// Whole numbers separated by spaces, commas or newlines, from `text`; "" or the
// one-line reason it is not such a list.
inline std::string parse_active(const std::string& text, std::vector<int32_t>& out) {
  out.clear();
  std::string token;
  std::istringstream in(text);
  auto flush = [&](std::string& t) -> std::string {
    if (t.empty()) return "";
    size_t used = 0;
    long long v = 0;
    try {
      v = std::stoll(t, &used);
    } catch (...) {
      used = 0;
    }
    if (used != t.size() || v < INT32_MIN || v > INT32_MAX) return "'" + t + "' is not a whole number";
    out.push_back(int32_t(v));
    t.clear();
    return "";
  };
  char c = 0;
  while (in.get(c)) {
    if (c == ',' || c == ' ' || c == '\n' || c == '\t' || c == '\r') {
      if (std::string why = flush(token); !why.empty()) return why;
    } else {
      token += c;
    }
  }
  return flush(token);
}

// The active list of a run: read from `path` when given (then checked), else
// drawn. "" or the one-line reason.
inline std::string active_list(const std::string& path, int d_ff, double sparsity, uint64_t seed,
                               std::vector<int32_t>& out) {
  if (path.empty()) {
    out = draw_active(d_ff, active_count(d_ff, sparsity), seed);
    return "";
  }
  std::ifstream f(path);
  if (!f) return "cannot read --indices " + path;
  std::stringstream text;
  text << f.rdbuf();
  if (std::string why = parse_active(text.str(), out); !why.empty()) return "--indices " + path + ": " + why;
  if (std::string why = check_active(out, d_ff); !why.empty()) return "--indices " + path + ": " + why;
  return "";
}

// Columns of the up side per active neuron: 2 for SwiGLU (gate, up), else 1.
inline int up_columns_per_neuron(const Model& m) { return m.swiglu ? 2 : 1; }

// The compact intermediate H (M x ld) has its rows padded to a multiple of 64
// halves (one k slice of the down product), the pad holding zeros.
inline int compact_ld(int active) { return (active + 63) / 64 * 64; }

}  // namespace wb::ffn
