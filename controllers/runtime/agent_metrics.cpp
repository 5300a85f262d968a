#include "controllers/runtime/agent_metrics.h"

#include <set>
#include <string_view>

#include "controllers/agent/agent_decision.h"
#include "controllers/model/run_view.h"
#include "controllers/schedule/spend.h"

namespace hb::controllers {

namespace {

constexpr const char* kSpendMetric = "heartbeat_agent_spend_cents";
constexpr const char* kBudgetMetric = "heartbeat_agent_budget_cents";
constexpr const char* kLastRunMetric = "heartbeat_agent_last_run_timestamp_seconds";
constexpr const char* kNextHeartbeatMetric = "heartbeat_agent_next_heartbeat_timestamp_seconds";
constexpr const char* kBudgetExceededMetric = "heartbeat_agent_budget_exceeded";
constexpr const char* kProviderThrottledMetric = "heartbeat_agent_provider_throttled";
constexpr const char* kPerAgentGauges[] = {kSpendMetric,          kBudgetMetric,
                                           kLastRunMetric,        kNextHeartbeatMetric,
                                           kBudgetExceededMetric, kProviderThrottledMetric};
constexpr RunPhase kFinalPhases[] = {RunPhase::kSucceeded, RunPhase::kFailed, RunPhase::kTimedOut,
                                     RunPhase::kCancelled};

bool condition_true(const Json& agent, std::string_view type) {
  const Json* conditions = find_path(agent, "status/conditions");
  if (conditions == nullptr || !conditions->is_array()) return false;
  for (const Json& c : *conditions) {
    if (c.is_object() && string_view_at(c, "type") == type) {
      return string_view_at(c, "status") == "True";
    }
  }
  return false;
}

double unix_seconds_of(TimePoint t) {
  return static_cast<double>(schedule::unix_seconds(t));
}

}  // namespace

AgentMetricRow agent_metric_row(const Json& agent, TimePoint now) {
  AgentMetricRow row;
  row.ns = string_at(agent, "metadata/namespace");
  row.name = string_at(agent, "metadata/name");
  if (string_at(agent, "status/spend/period") == schedule::spend_period(now)) {
    row.spend_cents = number_at(agent, "status/spend/cents").value_or(0);
  }
  if (auto budget = int_at(agent, "spec/budget/monthlyCents"); budget && *budget > 0) {
    row.budget_cents = static_cast<double>(*budget);
  }
  row.last_run_finished = time_at(agent, "status/lastHeartbeatTime");
  row.next_heartbeat = time_at(agent, "status/nextHeartbeatTime");
  row.budget_exceeded = condition_true(agent, kConditionBudgetExceeded);
  row.provider_throttled = condition_true(agent, kConditionProviderThrottled);
  return row;
}

Labels agent_run_labels(const std::string& ns, const std::string& agent, const std::string& phase) {
  return {{"namespace", ns}, {"agent", agent}, {"phase", phase}};
}

void export_agent_metrics(Metrics& metrics, const std::vector<AgentMetricRow>& agents,
                          std::size_t max_agents) {
  const bool on = !agents.empty() && agents.size() <= max_agents;
  const std::set<std::string> none;
  for (const char* family : kPerAgentGauges) metrics.retain(family, none);
  std::set<std::string> runs_kept;
  if (on) {
    for (const AgentMetricRow& a : agents) {
      const Labels labels = {{"namespace", a.ns}, {"agent", a.name}};
      metrics.gauge_set(kSpendMetric, labels, a.spend_cents);
      if (a.budget_cents) metrics.gauge_set(kBudgetMetric, labels, *a.budget_cents);
      if (a.last_run_finished) {
        metrics.gauge_set(kLastRunMetric, labels, unix_seconds_of(*a.last_run_finished));
      }
      if (a.next_heartbeat) {
        metrics.gauge_set(kNextHeartbeatMetric, labels, unix_seconds_of(*a.next_heartbeat));
      }
      metrics.gauge_set(kBudgetExceededMetric, labels, a.budget_exceeded ? 1 : 0);
      metrics.gauge_set(kProviderThrottledMetric, labels, a.provider_throttled ? 1 : 0);
      for (RunPhase phase : kFinalPhases) {
        runs_kept.insert(
            Metrics::label_text(agent_run_labels(a.ns, a.name, std::string(to_string(phase)))));
      }
    }
  }
  metrics.retain(kAgentRunsMetric, runs_kept);
}

}  // namespace hb::controllers
