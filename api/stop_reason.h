// Why a heartbeat's loop ended: the runner decides it, writes its wire name
// in the result, and the operator reads it back into the run's status.
#pragma once

#include <optional>
#include <string_view>

namespace hb::api {

enum class StopReason {
  kCompleted,          // the model answered without calling a tool
  kMaxTokens,          // the model's last answer was cut at max_tokens
  kPauseHeartbeats,    // the model called pause_heartbeats
  kMaxIterations,      // the agent type's model-call limit
  kBudget,             // the next call's worst case could pass the run's budget
  kDeadline,           // the wall deadline (the Job's, less the runner's margin)
  kRepeatedToolCall,   // the same tool and arguments too many times in a row
  kCancelled,          // SIGTERM (Job deleted, run cancelled, deadline)
  kProviderError,      // the model provider failed after retries
  kConfigError,        // the context document or environment is wrong
  kInternalError,      // a bug
  kToolsUnavailable,   // the tools container died or never answered
  kProviderQuota,      // the provider's quota is spent (insufficient_quota, or a
                       // 429 whose retry-after is longer than the run may wait)
  kPerRunTokenBudget,  // the next call's worst case could pass budget.perRunTokens
  kToolCallsPerReply,  // one reply asked for more tool calls than the runner runs
  kToolOutputBytes,    // the run's tool output reached the runner's bound
  kRequestBytes,       // the next model request would pass the runner's bound
  kDailyBudget,        // the next call's worst case could pass the day's budget left
};

// Wire names in the result JSON: "completed", "max_tokens", "pause_heartbeats",
// "max_iterations", "budget", "deadline", "repeated_tool_call", "cancelled",
// "provider_error", "config_error", "internal_error", "tools_unavailable",
// "provider_quota", "per_run_token_budget", "tool_calls_per_reply",
// "tool_output_bytes", "request_bytes", "daily_budget".
std::string_view to_string(StopReason reason);
// The reason with that wire name; nullopt for any other text.
std::optional<StopReason> parse_stop_reason(std::string_view name);

}  // namespace hb::api
