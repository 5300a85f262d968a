// Why a heartbeat's loop ended, and the pure checks that end it.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "runner/clock.h"

namespace hb::runner {

enum class StopReason {
  kCompleted,         // the model answered without calling a tool
  kMaxTokens,         // the model's last answer was cut at max_tokens
  kPauseHeartbeats,   // the model called pause_heartbeats
  kMaxIterations,     // the agent type's model-call limit
  kBudget,            // the next call's worst case could pass the run's budget
  kDeadline,          // the wall deadline (the Job's, less kDeadlineMargin)
  kRepeatedToolCall,  // the same tool and arguments kRepeatedToolCallsMax times in a row
  kCancelled,         // SIGTERM (Job deleted, run cancelled, deadline)
  kProviderError,     // the model provider failed after retries
  kConfigError,       // the context document or environment is wrong
  kInternalError,     // a bug
  kToolsUnavailable,  // the tools container died or never answered
};

// Wire names in the result JSON: "completed", "max_tokens", "pause_heartbeats",
// "max_iterations", "budget", "deadline", "repeated_tool_call", "cancelled",
// "provider_error", "config_error", "internal_error", "tools_unavailable".
std::string_view to_string(StopReason reason);

// Counts identical consecutive tool calls (name plus canonical arguments).
class RepeatedCallDetector {
 public:
  // Records a call; true when it makes kRepeatedToolCallsMax identical in a row.
  bool record(const std::string& name, const std::string& arguments);
  int streak() const { return streak_; }

 private:
  std::string last_key_;
  int streak_ = 0;
};

// Same JSON value, same text: objects with keys sorted, no whitespace.
// Malformed JSON is kept as written.
std::string canonical_arguments(const std::string& arguments);

struct BoundsInput {
  int iterations_done = 0;
  int iterations_max = 0;
  TimePoint now;
  TimePoint wall_deadline;
  double spent_cents = 0;
  double next_call_worst_cents = 0;
  std::optional<double> budget_cents;
};

// Checked before each model call, in this order: iterations, deadline, budget.
std::optional<StopReason> check_bounds_before_call(const BoundsInput& input);

// The Job's deadline less kDeadlineMargin.
TimePoint wall_deadline_for(TimePoint job_deadline);

}  // namespace hb::runner
