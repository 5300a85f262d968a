// The heartbeat's agent loop (Kelpie ADR-010): call the model with the type's
// tools; while it asks for tools, run them; stop on the first bound reached.
// Everything it touches is injected, so tests drive it with a fake clock, a
// scripted model and fake tools.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "api/agent_types.h"
#include "api/context_document.h"
#include "api/run_result.h"
#include "runner/clock.h"
#include "runner/conversation.h"
#include "runner/heartbeat.h"
#include "runner/tool_runner.h"
#include "runner/transcript.h"

namespace hb::runner {

struct LoopConfig {
  std::string model;
  api::AgentType agent_type = api::kAgentTypeDefault;
  std::vector<ToolSpec> tools;  // offered (allowed and available)
  int max_tokens = 0;
  api::Pricing pricing;
  std::optional<double> budget_cents;      // per-run limit (min of per-run, month and day left)
  std::optional<double> day_budget_cents;  // budget.dayRemainingCents
  std::optional<long long> budget_tokens;  // budget.perRunTokens: input plus output
  TimePoint wall_deadline;                 // the Job's deadline less kDeadlineMargin
  std::string first_message;               // earlier outputs + heartbeat prompt
  // Rendered before every model call, so memory edits show at once.
  std::function<std::string()> system_prompt;
  // Polled between steps (SIGTERM).
  std::function<bool()> cancelled;
  // Log line for refused tools (besides the transcript event).
  std::function<void(const std::string&)> log_warning;
};

struct LoopDeps {
  ModelClient& model;
  ToolRunner& tools;
  Clock& clock;
  Heartbeat& heartbeat;
  Transcript& transcript;
};

// pause_heartbeats' minutes: integer (or numeric string) clamped to
// [api::kPauseMinutesMin, api::kPauseMinutesMax]; api::kPauseMinutesDefault when absent or
// not a number.
int pause_minutes_from_arguments(const nlohmann::json& arguments);

// Never throws for model, tool or bound failures: they end up in the result.
api::RunResult run_agent_loop(const LoopConfig& config, LoopDeps deps);

}  // namespace hb::runner
