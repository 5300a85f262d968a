#include "api/stop_reason.h"

#include <array>
#include <utility>

namespace hb::api {
namespace {

constexpr std::array<std::pair<StopReason, std::string_view>, 18> kNames = {{
    {StopReason::kCompleted, "completed"},
    {StopReason::kMaxTokens, "max_tokens"},
    {StopReason::kPauseHeartbeats, "pause_heartbeats"},
    {StopReason::kMaxIterations, "max_iterations"},
    {StopReason::kBudget, "budget"},
    {StopReason::kDeadline, "deadline"},
    {StopReason::kRepeatedToolCall, "repeated_tool_call"},
    {StopReason::kCancelled, "cancelled"},
    {StopReason::kProviderError, "provider_error"},
    {StopReason::kConfigError, "config_error"},
    {StopReason::kInternalError, "internal_error"},
    {StopReason::kToolsUnavailable, "tools_unavailable"},
    {StopReason::kProviderQuota, "provider_quota"},
    {StopReason::kPerRunTokenBudget, "per_run_token_budget"},
    {StopReason::kToolCallsPerReply, "tool_calls_per_reply"},
    {StopReason::kToolOutputBytes, "tool_output_bytes"},
    {StopReason::kRequestBytes, "request_bytes"},
    {StopReason::kDailyBudget, "daily_budget"},
}};

}  // namespace

std::string_view to_string(StopReason reason) {
  for (const auto& [value, name] : kNames) {
    if (value == reason) return name;
  }
  return "internal_error";
}

std::optional<StopReason> parse_stop_reason(std::string_view name) {
  for (const auto& [value, wire] : kNames) {
    if (wire == name) return value;
  }
  return std::nullopt;
}

}  // namespace hb::api
