// A problem's own command-line parameters (--act, --split-k, --group-size,
// --sparsity, --model, ...): declared once by the problem, parsed and checked
// with the lesson's other options before any GPU work, and recorded in the
// results' "shape" beside m, n and k. Host only.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "records/records.hpp"

namespace wb {

struct ParamSpec {
  std::string name;                  // option --<name> (with '_' as '-'), key <name> in the results' shape
  std::string help;                  // one line for --help
  std::string default_value;
  std::vector<std::string> choices;  // non-empty: the value is one of these words
  bool numeric = false;              // a number in [min, max]
  bool integer = false;              // ... and a whole one
  double min = 0, max = 0;

  std::string option() const;        // "--split-k"
};

// "" when `value` is valid for `spec`; otherwise the one-line reason, naming the option.
std::string check_param(const ParamSpec& spec, const std::string& value);

// The values, by name; every declared parameter has one (its default or what was given).
class Params {
 public:
  void set(const std::string& name, const std::string& value) { values_[name] = value; }
  bool has(const std::string& name) const { return values_.count(name) != 0; }
  // Throws std::out_of_range for a name the problem never declared.
  const std::string& text(const std::string& name) const { return values_.at(name); }
  double number(const std::string& name) const;
  int64_t integer(const std::string& name) const;
  const std::map<std::string, std::string>& all() const { return values_; }

 private:
  std::map<std::string, std::string> values_;
};

// Every declared parameter at its default.
Params default_params(const std::vector<ParamSpec>& specs);

// For the results' shape: numbers as numbers, words as words.
std::map<std::string, ShapeParam> shape_params(const std::vector<ParamSpec>& specs, const Params& values);

}  // namespace wb
