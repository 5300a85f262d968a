#include "controllers/agent/mention_plan.h"

#include <algorithm>

#include "api/hb_assert.h"

namespace hb::controllers {

namespace {

bool may_mention(const RunObservation& run) {
  return run.phase == RunPhase::kSucceeded && !run.view->cost_recorded;
}

bool accepts(const std::map<std::string, bool>& accepted, const std::string& target) {
  const auto it = accepted.find(target);
  return it != accepted.end() && it->second;
}

}  // namespace

std::vector<std::string> mention_targets(const AgentSpec& spec,
                                         const std::vector<RunObservation>& runs) {
  std::vector<std::string> targets;
  for (const RunObservation& run : runs) {
    if (!may_mention(run) || run.view->mention_depth >= kMentionDepthMax) continue;
    for (std::string& target : mentioned_agents(string_view_at(run.status, "output"), spec.name)) {
      if (targets.size() >= kMentionTargetsPerPassMax) return targets;
      if (std::find(targets.begin(), targets.end(), target) == targets.end()) {
        targets.push_back(std::move(target));
      }
    }
  }
  HB_ASSERT_MSG(targets.size() <= kMentionTargetsPerPassMax,
                "a pass reads at most its cap of mention targets");
  return targets;
}

MentionPlan plan_mentions(const AgentSpec& spec, const std::vector<RunObservation>& runs,
                          const std::map<std::string, bool>& accepted) {
  MentionPlan plan;
  for (const RunObservation& run : runs) {
    if (!may_mention(run)) continue;
    const std::vector<std::string> targets =
        mentioned_agents(string_view_at(run.status, "output"), spec.name);
    if (targets.empty()) continue;
    const int64_t depth = run.view->mention_depth;
    if (depth >= kMentionDepthMax) {
      plan.events.push_back({EventTarget::kRun, run.view->name, true, "MentionChainStopped",
                             "a run started by a chain of " + std::to_string(depth) +
                                 " mentions wakes nobody (at most " +
                                 std::to_string(kMentionDepthMax) + ")"});
      continue;
    }
    for (const std::string& target : targets) {
      if (!accepts(accepted, target)) continue;
      MentionRequest request{target, mention_run_name(target, run.view->uid),
                             "mentioned by " + spec.name + " in run " + run.view->name, depth + 1};
      HB_ASSERT_MSG(request.depth <= kMentionDepthMax, "a mention chain stops at its bound");
      plan.events.push_back(
          {EventTarget::kAgent, spec.name, false, "MentionWoke",
           "run " + run.view->name + " mentioned @" + target + ": callback run " + request.name,
           /*routine=*/true});
      plan.runs.push_back(std::move(request));
    }
  }
  return plan;
}

}  // namespace hb::controllers
