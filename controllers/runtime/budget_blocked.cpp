#include "controllers/runtime/budget_blocked.h"

#include "controllers/schedule/blocks.h"

namespace hb::controllers {

BudgetBlockedTally::BudgetBlockedTally(Metrics& metrics) : metrics_(metrics) {
  std::lock_guard lock(mutex_);
  publish();
}

void BudgetBlockedTally::record(const std::string& agent_key, std::string_view reason) {
  std::lock_guard lock(mutex_);
  auto it = reason_by_agent_.find(agent_key);
  if (reason.empty()) {
    if (it == reason_by_agent_.end()) return;
    reason_by_agent_.erase(it);
  } else if (it == reason_by_agent_.end()) {
    reason_by_agent_.emplace(agent_key, reason);
  } else if (it->second != reason) {
    it->second = reason;
  } else {
    return;
  }
  publish();
}

void BudgetBlockedTally::forget(const std::string& agent_key) {
  record(agent_key, "");
}

void BudgetBlockedTally::publish() {
  // Counted on change: a change is one agent's pass, the map is the blocked agents only.
  double awaiting = 0;
  double until_next_month = 0;
  for (const auto& [key, reason] : reason_by_agent_) {
    (reason == schedule::kReasonAwaitingApproval ? awaiting : until_next_month) += 1;
  }
  metrics_.gauge_set(kBudgetBlockedMetric,
                     {{"reason", std::string(schedule::kReasonAwaitingApproval)}}, awaiting);
  metrics_.gauge_set(kBudgetBlockedMetric,
                     {{"reason", std::string(schedule::kReasonBudgetExceeded)}}, until_next_month);
}

}  // namespace hb::controllers
