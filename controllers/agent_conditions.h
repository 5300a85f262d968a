// The Agent's conditions (Ready, Paused, BudgetExceeded, SpecValid) and the
// Events their transitions raise. Pure steps of decide_agent.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "controllers/agent_decision.h"
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

// The four conditions in the order status lists them. Their texts are views
// into the inputs of wanted_conditions, which must outlive them.
struct AgentConditions {
  WantedCondition ready, paused, budget_exceeded, spec_valid;
};

// `config_error`: the newest run's (newest_run_config_error).
AgentConditions wanted_conditions(const SpecValidity& spec, const schedule::BlockResult& blocks,
                                  const std::optional<std::string>& config_error,
                                  bool has_schedule);

// The conditions to store; the stored list itself (shared) when it already
// says them.
Conditions conditions_for(const Conditions& stored, const AgentConditions& wanted,
                          int64_t generation, TimePoint now);

// Events for conditions that change: the spec turned invalid, a pause or the
// budget began, the agent became ready again.
std::vector<Event> condition_events(const Conditions& stored, const AgentConditions& wanted,
                                    const std::string& agent_name);

// The kubelet's complaint when the newest run failed because its container
// could not be configured (a missing apiKeySecretRef key, say): the Agent's
// Ready condition carries it until a newer run gets further.
std::optional<std::string> newest_run_config_error(const std::vector<RunObservation>& runs);

}  // namespace hb::controllers
