#include "runner/stop_rules.h"

#include "runner/limits.h"
#include "runner/wire_util.h"

namespace hb::runner {

std::string canonical_arguments(const std::string& arguments) {
  auto parsed = parse_json_or_discarded(arguments);
  if (parsed.is_discarded()) return arguments;
  return dump_json(parsed);  // nlohmann's object keeps keys sorted
}

bool RepeatedCallDetector::record(const std::string& name, const std::string& arguments) {
  std::string key = name + '\0' + canonical_arguments(arguments);
  if (key == last_key_) {
    ++streak_;
  } else {
    last_key_ = std::move(key);
    streak_ = 1;
  }
  return streak_ >= kRepeatedToolCallsMax;
}

std::optional<StopReason> check_bounds_before_call(const BoundsInput& input) {
  if (input.iterations_done >= input.iterations_max) return StopReason::kMaxIterations;
  if (input.now >= input.wall_deadline) return StopReason::kDeadline;
  if (input.budget_cents && input.spent_cents + input.next_call_worst_cents > *input.budget_cents) {
    return StopReason::kBudget;
  }
  if (input.budget_tokens &&
      input.tokens_used + input.next_call_worst_tokens > *input.budget_tokens) {
    return StopReason::kPerRunTokenBudget;
  }
  return std::nullopt;
}

TimePoint wall_deadline_for(TimePoint job_deadline) {
  return job_deadline - kDeadlineMargin;
}

}  // namespace hb::runner
