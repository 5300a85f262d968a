// The pure checks that end a heartbeat's loop (why it ended: api/stop_reason.h).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "api/stop_reason.h"
#include "runner/clock.h"
#include "runner/conversation.h"

namespace hb::runner {

// The reason a loop ended is part of the contract with the operator.
using api::StopReason;

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
  long long tokens_used = 0;               // input plus output tokens of the calls made
  long long next_call_worst_tokens = 0;    // estimated input plus max_tokens
  std::optional<long long> budget_tokens;  // budget.perRunTokens
  std::size_t request_bytes = 0;           // request_content_bytes of the next call
  // The day's part of budget_cents (budget.dayRemainingCents): passing it
  // stops with kDailyBudget rather than kBudget.
  std::optional<double> day_budget_cents = {};
};

// Checked before each model call, in this order: iterations, deadline, budget
// (cents), budget.perRunTokens, kModelRequestBytesMax. Exactly at a limit is
// allowed.
std::optional<StopReason> check_bounds_before_call(const BoundsInput& input);

// The bytes `text` takes as a JSON string's content.
std::size_t json_escaped_bytes(std::string_view text);
// A request's content as JSON-escaped bytes plus kRequestItemOverheadBytes
// per message, call and tool: what the wire body holds, give or take its keys.
std::size_t request_content_bytes(const ModelRequest& request);

// The Job's deadline less kDeadlineMargin.
TimePoint wall_deadline_for(TimePoint job_deadline);

}  // namespace hb::runner
