// The AgentReconciler's answer to when an agent's key is looked at again
// after a pass that wrote its plan.
#include <algorithm>

#include "controllers/shell/agent_reconciler.h"

namespace hb::controllers {

namespace {

// When the key is looked at again: at the decision's next instant; at once
// when an object in the way held a run back (so the condition names it);
// then when that object is looked for again.
ReconcileResult requeue_for(const AgentDecision& d, TimePoint now, bool blocked,
                            bool object_in_the_way) {
  ReconcileResult result;
  if (d.requeue_at) {
    const auto delay = std::chrono::ceil<std::chrono::milliseconds>(*d.requeue_at - now);
    result.requeue_after = std::max(delay, std::chrono::milliseconds(1));
  }
  if (blocked) {
    result.requeue_after = std::chrono::milliseconds(1);
  } else if (object_in_the_way) {
    result.requeue_after =
        std::min(result.requeue_after.value_or(kObjectInTheWayRecheck),
                 std::chrono::duration_cast<std::chrono::milliseconds>(kObjectInTheWayRecheck));
  }
  return result;
}

}  // namespace

ReconcileResult AgentReconciler::requeue_after_pass(const std::string& key, const AgentDecision& d,
                                                    TimePoint now, bool start_held_back,
                                                    bool found_in_the_way, bool in_the_way) {
  bool waits_for_budget = false;
  {
    std::lock_guard lock(mutex_);
    waits_for_budget = waiting_for_budget_.erase(key) > 0;
  }
  ReconcileResult result =
      requeue_for(d, now, (start_held_back && !waits_for_budget) || found_in_the_way, in_the_way);
  if (waits_for_budget) {
    const auto recheck = std::chrono::duration_cast<std::chrono::milliseconds>(kBudgetHoldRecheck);
    result.requeue_after = std::min(result.requeue_after.value_or(recheck), recheck);
  }
  return result;
}

}  // namespace hb::controllers
