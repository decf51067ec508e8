#include "harness/catalog.hpp"

#include <stdexcept>

#include <nlohmann/json.hpp>

namespace wb {

namespace {

// lessons/catalog.json, as configured into the build.
constexpr const char* kCatalogJson =
#include "catalog_json.inc"
    ;

std::vector<LessonInfo> parse_catalog() {
  const nlohmann::json j = nlohmann::json::parse(kCatalogJson);
  std::vector<LessonInfo> lessons;
  for (const nlohmann::json& e : j.at("lessons")) {
    lessons.push_back(LessonInfo{e.at("id").get<std::string>(), e.at("number").get<std::string>(),
                                 e.at("title").get<std::string>(), e.at("idea_from").get<std::string>(),
                                 e.at("new_here").get<std::string>(), e.at("why_faster").get<std::string>(),
                                 e.at("check").get<std::string>(), e.at("oldest_gpu").get<std::string>(),
                                 e.value("takes_n_k", true)});
  }
  return lessons;
}

}  // namespace

const std::vector<LessonInfo>& lesson_catalog() {
  static const std::vector<LessonInfo> lessons = parse_catalog();
  return lessons;
}

std::vector<std::string> lesson_ids() {
  std::vector<std::string> ids;
  for (const LessonInfo& l : lesson_catalog()) ids.push_back(l.id);
  return ids;
}

const LessonInfo* find_lesson(const std::string& id) {
  for (const LessonInfo& l : lesson_catalog())
    if (l.id == id) return &l;
  return nullptr;
}

const LessonInfo& catalog_entry(const std::string& id) {
  if (const LessonInfo* l = find_lesson(id)) return *l;
  throw std::out_of_range(id + ": not in the lesson catalogue");
}

std::string lesson_explanation(const LessonInfo& l) {
  std::string s;
  s += "Lesson " + l.number + " - " + l.title + "  (" + l.id + ")\n";
  s += "  idea from: " + l.idea_from + "; runs on " + l.oldest_gpu + " and newer\n";
  s += "  new here:  " + l.new_here + "\n";
  s += "  faster:    " + l.why_faster + "\n";
  s += "  look for:  " + l.check + "\n";
  return s;
}

}  // namespace wb
