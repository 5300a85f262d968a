#include "controllers/run/run_conditions.h"

#include <string>
#include <string_view>
#include <vector>

#include "api/hb_assert.h"
#include "controllers/model/run_view.h"

namespace hb::controllers {

namespace {

struct RunCondition {
  const char* type;
  bool status;
  std::string reason;
};

// The CRD's condition reason pattern; a run reason that does not fit (none
// the operator writes) falls back to the phase name.
bool fits_reason_pattern(std::string_view reason) {
  auto letter = [](char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'); };
  auto digit = [](char c) { return c >= '0' && c <= '9'; };
  if (reason.empty() || !letter(reason.front())) return false;
  for (char c : reason) {
    if (!letter(c) && !digit(c) && c != '_' && c != ',' && c != ':') return false;
  }
  return reason.back() != ',' && reason.back() != ':';
}

// Finished is one condition for either outcome (a Job has none, so
// `kubectl wait --for=condition=Complete` hangs on a failed one); its reason
// is the phase, the run's own reason stays in Complete or Failed.
std::vector<RunCondition> conditions_for_phase(RunPhase phase, const std::string& reason) {
  HB_ASSERT_MSG(!reason.empty(), "every run condition has a reason (the CRD requires one)");
  const std::string phase_name(to_string(phase));
  switch (phase) {
    case RunPhase::kQueued:
      return {{kRunConditionRunning, false, "Queued"}, {kRunConditionFinished, false, "Queued"}};
    case RunPhase::kRunning:
      return {{kRunConditionRunning, true, "Running"}, {kRunConditionFinished, false, "Running"}};
    case RunPhase::kSucceeded:
      return {{kRunConditionRunning, false, reason},
              {kRunConditionComplete, true, reason},
              {kRunConditionFinished, true, phase_name}};
    case RunPhase::kFailed:
    case RunPhase::kTimedOut:
    case RunPhase::kCancelled:
      return {{kRunConditionRunning, false, reason},
              {kRunConditionFailed, true, reason},
              {kRunConditionFinished, true, phase_name}};
  }
  return {};
}

const Json* stored_condition(const Json* stored, const char* type) {
  HB_ASSERT_MSG(type != nullptr && *type != '\0', "a condition is looked up by its type");
  const Json* list = stored != nullptr ? find_path(*stored, "conditions") : nullptr;
  if (list == nullptr || !list->is_array()) return nullptr;
  for (const Json& c : *list) {
    if (c.is_object() && c.value("type", "") == type) return &c;
  }
  return nullptr;
}

}  // namespace

Json with_run_conditions(Json status, const Json* stored, int64_t generation, TimePoint now) {
  const RunPhase phase =
      parse_run_phase(string_view_at(status, "phase")).value_or(RunPhase::kQueued);
  const std::string run_reason = string_at(status, "reason");
  const std::string reason =
      fits_reason_pattern(run_reason) ? run_reason : std::string(to_string(phase));
  const std::string message = string_at(status, "message");
  const std::vector<RunCondition> wanted = conditions_for_phase(phase, reason);
  HB_ASSERT_MSG(!wanted.empty() && std::string_view(wanted.back().type) == kRunConditionFinished &&
                    wanted.back().status == is_final(phase),
                "Finished is the last condition, true exactly for a final phase");
  Json conditions = Json::array();
  for (const RunCondition& c : wanted) {
    const std::string status_text = c.status ? "True" : "False";
    const Json* before = stored_condition(stored, c.type);
    const bool kept = before != nullptr && before->value("status", "") == status_text &&
                      !string_at(*before, "lastTransitionTime").empty();
    conditions.push_back({{"type", c.type},
                          {"status", status_text},
                          {"observedGeneration", generation},
                          {"lastTransitionTime", kept ? string_at(*before, "lastTransitionTime")
                                                      : schedule::format_rfc3339(now)},
                          {"reason", c.reason},
                          {"message", message}});
  }
  status["conditions"] = std::move(conditions);
  status["observedGeneration"] = generation;
  return status;
}

}  // namespace hb::controllers
