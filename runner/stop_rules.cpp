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
    const bool day = input.day_budget_cents &&
                     input.spent_cents + input.next_call_worst_cents > *input.day_budget_cents;
    return day ? StopReason::kDailyBudget : StopReason::kBudget;
  }
  if (input.budget_tokens &&
      input.tokens_used + input.next_call_worst_tokens > *input.budget_tokens) {
    return StopReason::kPerRunTokenBudget;
  }
  if (input.request_bytes > kModelRequestBytesMax) return StopReason::kRequestBytes;
  return std::nullopt;
}

std::size_t json_escaped_bytes(std::string_view text) {
  std::size_t bytes = text.size();
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\' || c == '\n' || c == '\t' || c == '\r' || c == '\b' || c == '\f') {
      bytes += 1;
    } else if (byte < 0x20) {
      bytes += 5;  // \u00XX
    }
  }
  return bytes;
}

std::size_t request_content_bytes(const ModelRequest& request) {
  std::size_t bytes = json_escaped_bytes(request.system);
  for (const auto& message : request.messages) {
    bytes += kRequestItemOverheadBytes + json_escaped_bytes(message.text);
    for (const auto& call : message.tool_calls) {
      bytes += kRequestItemOverheadBytes + json_escaped_bytes(call.id) +
               json_escaped_bytes(call.name) + json_escaped_bytes(call.arguments);
    }
    for (const auto& result : message.tool_results) {
      bytes += kRequestItemOverheadBytes + json_escaped_bytes(result.call_id) +
               json_escaped_bytes(result.name) + json_escaped_bytes(result.content);
    }
  }
  for (const auto& tool : request.tools) {
    bytes += kRequestItemOverheadBytes + json_escaped_bytes(tool.name) +
             json_escaped_bytes(tool.description) + tool.parameters.dump().size();
  }
  return bytes;
}

TimePoint wall_deadline_for(TimePoint job_deadline) {
  return job_deadline - kDeadlineMargin;
}

}  // namespace hb::runner
