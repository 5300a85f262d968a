// The mention step of the Agent decision: which callback runs this agent's
// finished runs ask for by @name (mentions.h). Derived again on every pass
// until a run is marked counted, so a crash before the run is created loses
// nothing and the deterministic name keeps a repeat from making two. Pure.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "controllers/agent/agent_decision.h"

namespace hb::controllers {

struct MentionPlan {
  std::vector<MentionRequest> runs;
  std::vector<Event> events;
};

// Succeeded runs not yet marked counted; `accepts`: whether the named Agent
// takes a mention from this one (null: none does).
MentionPlan plan_mentions(const AgentSpec& spec, const std::vector<RunObservation>& runs,
                          const std::function<bool(const std::string&)>& accepts);

}  // namespace hb::controllers
