// The lessons, in order (lessons/catalog.json, compiled in): what each
// teaches, for the lesson binaries' headers, `workbook list`, the explanation
// shown with recorded results when there is no GPU, and the tests. Host only.
#pragma once

#include <string>
#include <vector>

namespace wb {

struct LessonInfo {
  std::string id;         // executable name, e.g. "lesson02_blocked"
  std::string number;     // "02"
  std::string title;      // "Blocked: shared-memory tiles, then tensor cores"
  std::string idea_from;  // where the idea comes from
  std::string new_here;   // what is new since the previous lesson
  std::string why_faster; // why it should be faster, in a sentence or two
  std::string check;      // what to look for in the report
  std::string oldest_gpu; // oldest GPU generation it runs on
  bool takes_n_k = true;  // false: N and K follow from the lesson's own options (lesson 08's --model)
};

const std::vector<LessonInfo>& lesson_catalog();
// Their ids, in order ("lesson01_naive", ...).
std::vector<std::string> lesson_ids();
// nullptr when `id` is not a lesson.
const LessonInfo* find_lesson(const std::string& id);
// The entry for `id`; throws std::out_of_range when `id` is not a lesson.
const LessonInfo& catalog_entry(const std::string& id);

// Prints the lesson's explanation (title, what is new, why faster, what to check).
std::string lesson_explanation(const LessonInfo& lesson);

}  // namespace wb
