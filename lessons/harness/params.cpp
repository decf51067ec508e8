#include "harness/params.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <sstream>

namespace wb {

namespace {

// A whole-string number, or false.
bool parse_number(const std::string& text, double* out) {
  if (text.empty()) return false;
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size() || errno == ERANGE || !std::isfinite(v)) return false;
  *out = v;
  return true;
}

std::string format_number(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

}  // namespace

std::string ParamSpec::option() const {
  std::string o = "--" + name;
  for (char& c : o)
    if (c == '_') c = '-';
  return o;
}

std::string check_param(const ParamSpec& spec, const std::string& value) {
  if (!spec.choices.empty()) {
    for (const std::string& c : spec.choices)
      if (c == value) return "";
    std::string known;
    for (const std::string& c : spec.choices) known += (known.empty() ? "" : ", ") + c;
    return spec.option() + ": unknown value '" + value + "' (known: " + known + ")";
  }
  if (spec.numeric) {
    double v = 0;
    if (!parse_number(value, &v)) return spec.option() + ": '" + value + "' is not a number";
    if (spec.integer && v != std::floor(v)) return spec.option() + ": '" + value + "' is not a whole number";
    if (v < spec.min || v > spec.max)
      return spec.option() + " must be between " + format_number(spec.min) + " and " + format_number(spec.max) +
             " (got " + value + ")";
  }
  return "";
}

double Params::number(const std::string& name) const {
  double v = 0;
  if (!parse_number(text(name), &v)) throw std::out_of_range("parameter " + name + " is not a number");
  return v;
}

int64_t Params::integer(const std::string& name) const { return int64_t(std::llround(number(name))); }

Params default_params(const std::vector<ParamSpec>& specs) {
  Params p;
  for (const ParamSpec& s : specs) p.set(s.name, s.default_value);
  return p;
}

std::map<std::string, ShapeParam> shape_params(const std::vector<ParamSpec>& specs, const Params& values) {
  std::map<std::string, ShapeParam> out;
  for (const ParamSpec& s : specs) {
    ShapeParam p;
    p.text = values.text(s.name);
    p.numeric = s.numeric && parse_number(p.text, &p.value);
    out[s.name] = p;
  }
  return out;
}

}  // namespace wb
