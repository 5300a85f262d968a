// What starting one run writes, decided purely: the failed-before-start
// status of a run that cannot start (no prompt, a context document too
// large to ride with it), or its Job and context ConfigMap with the
// annotations the operator trusts later (the admitting policies, the cents
// held for it). The shell reads the inputs, commits the budget hold, then
// performs what this returns.
#pragma once

#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "controllers/agent/prompt_skip.h"
#include "controllers/model/agent_spec.h"
#include "controllers/model/run_view.h"
#include "controllers/pod/job_builder.h"
#include "controllers/run/earlier_runs.h"
#include "controllers/spend/budget_hold_ahead.h"

namespace hb::controllers {

// Why a run ends Failed before a Job is made; its status says both.
struct StartRefusal {
  std::string reason;   // a run_status.h kReason*
  std::string message;  // names what is missing or too large, and the fix
};

// The heartbeat prompt as the shell read it: its text, or why there is none.
struct PromptText {
  const std::string* text = nullptr;  // null: `gap` says why
  const PromptGap* gap = nullptr;
  std::string source;  // where the text came from, for a message
};

struct RunStartInput {
  const AgentSpec* spec = nullptr;     // a valid Agent's (parse_agent_spec)
  const StartingRun* run = nullptr;    // the run being started
  PromptText prompt;                   // text set (prompt_refusal said none)
  std::vector<EarlierRun> earlier;     // the runs its context document tells
  const HoldDecision* hold = nullptr;  // committed, with hold->start set
  Spend spend{};                       // the Agent's status.spend
  Pricing pricing{};                   // what the operator charges the run at
  std::optional<int64_t> per_run_tokens{};
  std::string admitting_policies;  // kAnnotationPolicies' value for the agent now
  const JobConfig* job = nullptr;
  TimePoint now{};
};

using RunStart = std::variant<StartRefusal, JobPlan>;

// A run whose prompt is missing cannot start; nullopt when it has text.
std::optional<StartRefusal> prompt_refusal(const PromptText& prompt);

// The run's context rendered and its Job built, or why it cannot start.
// By value: `input.earlier` moves into the context, not copied (pass a
// temporary or std::move).
RunStart plan_run_start(RunStartInput input);

// The whole status of a run that ended before it started: Failed, cost 0.
Json failed_before_start_status(const StartRefusal& refusal, TimePoint now);

}  // namespace hb::controllers
