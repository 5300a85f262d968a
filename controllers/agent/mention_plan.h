// The mention step of the Agent decision: which callback runs this agent's
// finished runs ask for by @name (mentions.h). Derived again on every pass
// until a run is marked counted, so a crash before the run is created loses
// nothing and the deterministic name keeps a repeat from making two. Pure.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "controllers/agent/agent_decision.h"

namespace hb::controllers {

// Distinct Agents the shell looks up for one pass's mentions: the runs
// counted in one pass are few, each wakes at most kMentionsPerRunMax, so
// this only bounds a pass that counts a backlog (targets beyond it wake nobody).
inline constexpr std::size_t kMentionTargetsPerPassMax = 32;

struct MentionPlan {
  std::vector<MentionRequest> runs;
  std::vector<Event> events;
};

// The Agents the succeeded, not yet marked runs @mention and may wake (a
// run at the chain's depth limit wakes nobody), in order of first mention,
// at most kMentionTargetsPerPassMax.
std::vector<std::string> mention_targets(const AgentSpec& spec,
                                         const std::vector<RunObservation>& runs);

// Succeeded runs not yet marked counted; `accepted`: whether the named
// Agent takes a mention from this one (a name not in it: no).
MentionPlan plan_mentions(const AgentSpec& spec, const std::vector<RunObservation>& runs,
                          const std::map<std::string, bool>& accepted);

}  // namespace hb::controllers
