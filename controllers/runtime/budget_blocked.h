// heartbeat_budget_blocked_agents{reason}: how many Agents their budget
// stops, by the BudgetExceeded condition's reason (AwaitingApproval: a
// person must act; BudgetExceeded: it lifts when the month turns). The
// reconciler records each Agent's reason after its pass and forgets Agents
// that are gone, so the count costs nothing per scrape and holds for any
// fleet size (two series, unlike the per-agent families).
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <string_view>

#include "controllers/runtime/metrics.h"

namespace hb::controllers {

inline constexpr const char* kBudgetBlockedMetric = "heartbeat_budget_blocked_agents";

class BudgetBlockedTally {
 public:
  explicit BudgetBlockedTally(Metrics& metrics);
  // `reason`: the BudgetExceeded condition's reason while it is True, else empty.
  void record(const std::string& agent_key, std::string_view reason);
  void forget(const std::string& agent_key);

 private:
  void publish();  // with mutex_ held

  Metrics& metrics_;
  std::mutex mutex_;
  std::map<std::string, std::string> reason_by_agent_;  // blocked agents only
};

}  // namespace hb::controllers
