// The Agent's conditions and the Events their transitions raise. Pure steps
// of decide_agent.
//
// They follow kstatus (what Flux and Argo CD read): Stalled is a problem only
// a person can fix (invalid spec, object in the way, missing Secret key or
// prompt ConfigMap); Reconciling is work the operator has not finished; Ready
// is neither. A pause or a spent budget is a state the user chose, so the
// agent stays Ready with a reason that says so, and Paused / BudgetExceeded
// say which.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "controllers/agent/agent_decision.h"
#include "controllers/schedule/blocks.h"

namespace hb::controllers {

struct WantedCondition {
  const char* type;
  bool status;
  std::string_view reason;
  std::string_view message;
};

// The spec's validity as the conditions say it. The views must outlive the
// conditions made from it.
struct SpecValidity {
  bool valid = true;
  std::string_view invalid_reason;  // InvalidSpec | ObjectInTheWay
  std::string_view errors;          // the spec errors joined; empty when valid
};

// Why the newest run could not get going, when a person must act: the
// kubelet could not configure its container (a missing apiKeySecretRef
// Secret or key), or its prompt ConfigMap or key is missing.
struct RunProblem {
  std::string_view reason;  // kReasonContainerConfigError | kReasonPromptNotFound
  std::string message;
};

// The six conditions in the order status lists them, then ProviderThrottled
// while a provider quota hold applies (and, once stored, False after it).
// Their texts are views into the inputs of wanted_conditions, which must
// outlive them.
struct AgentConditions {
  WantedCondition ready, reconciling, stalled, paused, budget_exceeded, spec_valid;
  std::optional<WantedCondition> provider_throttled;  // True: held; unset: never held
};

// `run_problem`: the newest run's (newest_run_problem). `skipped`: the last
// slot skipped for its prompt (a missing one needs a person: Stalled; an
// empty one is a choice: Ready, saying so).
AgentConditions wanted_conditions(const SpecValidity& spec, const schedule::BlockResult& blocks,
                                  const std::optional<RunProblem>& run_problem,
                                  const std::optional<SkippedHeartbeat>& skipped,
                                  bool has_schedule);

// The conditions to store; the stored list itself (shared) when it already
// says them.
Conditions conditions_for(const Conditions& stored, const AgentConditions& wanted,
                          int64_t generation, TimePoint now);

// Events for conditions that change: the spec turned invalid, a pause or the
// budget began (a policy's pause also over a pause the agent already had),
// the agent runs by itself again (no pause, budget or stall).
std::vector<Event> condition_events(const Conditions& stored, const AgentConditions& wanted,
                                    const std::string& agent_name);

// The newest problem run's, when it failed as ContainerConfigError (the
// kubelet's complaint) or PromptNotFound: the Agent is Stalled with it until
// a newer run gets past that step (finishes without it, or its Job is made
// or its runner container starts, as the step was); a newer run stuck at the
// same step keeps it.
std::optional<RunProblem> newest_run_problem(const std::vector<RunObservation>& runs);

// The BudgetExceeded condition's reason while it is True; empty otherwise
// (heartbeat_budget_blocked_agents).
std::string_view budget_block_reason(const AgentStatus& status);

}  // namespace hb::controllers
