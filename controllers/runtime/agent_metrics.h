// Per-agent metrics with bounded cardinality: labels namespace and agent
// only, and none at all above a configured number of Agents (a fleet of
// 10,000 should not cost Prometheus 40,000 series unasked). Spend, budget,
// the last and next heartbeat and the budget and provider holds are read
// from the cached Agents when /metrics is scraped; the
// runs counter is kept by the reconciler and trimmed here to Agents that
// still exist. Pure but for the Metrics registry it writes.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "controllers/model/json_util.h"
#include "controllers/runtime/metrics.h"
#include "controllers/schedule/utc_time.h"

namespace hb::controllers {

inline constexpr std::size_t kAgentMetricsMaxDefault = 1000;
inline constexpr const char* kAgentRunsMetric = "heartbeat_agent_runs_total";

struct AgentMetricRow {
  std::string ns, name;
  double spend_cents = 0;                      // this UTC month
  std::optional<double> budget_cents;          // none: unlimited
  std::optional<TimePoint> last_run_finished;  // status.lastHeartbeatTime
  // status.nextHeartbeatTime: when the operator means to start the next
  // heartbeat, blocks counted; none while a person must act (paused, a budget
  // stop awaiting approval) or the spec is invalid.
  std::optional<TimePoint> next_heartbeat;
  bool budget_exceeded = false;     // the BudgetExceeded condition is True
  bool provider_throttled = false;  // the ProviderThrottled condition is True
};

AgentMetricRow agent_metric_row(const Json& agent, TimePoint now);

// The labels of one agent's runs counter.
Labels agent_run_labels(const std::string& ns, const std::string& agent, const std::string& phase);

// Sets the per-agent families from `agents` (replacing what was there), or
// empties them when there are more than `max_agents` (0: always empty).
void export_agent_metrics(Metrics& metrics, const std::vector<AgentMetricRow>& agents,
                          std::size_t max_agents);

}  // namespace hb::controllers
