#include "controllers/model/conditions.h"

#include "controllers/schedule/utc_time.h"

namespace hb::controllers {

namespace {

constexpr std::string_view kTrue = "True";
constexpr std::string_view kFalse = "False";

}  // namespace

Condition make_condition(const Conditions& existing, std::string_view type, bool status,
                         std::string_view reason, std::string_view message, int64_t generation,
                         TimePoint now) {
  const std::string_view status_text = status ? kTrue : kFalse;
  const std::string* kept = nullptr;  // the last matching condition's time wins
  if (existing != nullptr) {
    for (const Condition& c : *existing) {
      if (c.type == type && c.status == status_text && !c.last_transition_time.empty()) {
        kept = &c.last_transition_time;
      }
    }
  }
  return Condition{std::string(type),   std::string(status_text),
                   generation,          kept != nullptr ? *kept : schedule::format_rfc3339(now),
                   std::string(reason), std::string(message)};
}

}  // namespace hb::controllers
