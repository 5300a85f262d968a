#include "controllers/runtime/agent_metrics.h"

#include <set>

#include "controllers/run_view.h"
#include "controllers/schedule/spend.h"

namespace hb::controllers {

namespace {

constexpr const char* kSpendMetric = "heartbeat_agent_spend_cents";
constexpr const char* kBudgetMetric = "heartbeat_agent_budget_cents";
constexpr const char* kLastRunMetric = "heartbeat_agent_last_run_timestamp_seconds";
constexpr RunPhase kFinalPhases[] = {RunPhase::kSucceeded, RunPhase::kFailed, RunPhase::kTimedOut,
                                     RunPhase::kCancelled};

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
  return row;
}

Labels agent_run_labels(const std::string& ns, const std::string& agent, const std::string& phase) {
  return {{"namespace", ns}, {"agent", agent}, {"phase", phase}};
}

void export_agent_metrics(Metrics& metrics, const std::vector<AgentMetricRow>& agents,
                          std::size_t max_agents) {
  const bool on = !agents.empty() && agents.size() <= max_agents;
  const std::set<std::string> none;
  for (const char* family : {kSpendMetric, kBudgetMetric, kLastRunMetric}) {
    metrics.retain(family, none);
  }
  std::set<std::string> runs_kept;
  if (on) {
    for (const AgentMetricRow& a : agents) {
      const Labels labels = {{"namespace", a.ns}, {"agent", a.name}};
      metrics.gauge_set(kSpendMetric, labels, a.spend_cents);
      if (a.budget_cents) metrics.gauge_set(kBudgetMetric, labels, *a.budget_cents);
      if (a.last_run_finished) {
        metrics.gauge_set(kLastRunMetric, labels,
                          static_cast<double>(schedule::unix_seconds(*a.last_run_finished)));
      }
      for (RunPhase phase : kFinalPhases) {
        runs_kept.insert(
            Metrics::label_text(agent_run_labels(a.ns, a.name, std::string(to_string(phase)))));
      }
    }
  }
  metrics.retain(kAgentRunsMetric, runs_kept);
}

}  // namespace hb::controllers
