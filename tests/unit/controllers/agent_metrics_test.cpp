// Per-agent metrics: what they say, and their bounded cardinality.
#include "controllers/runtime/agent_metrics.h"

#include <gtest/gtest.h>

#include "controllers/runtime/budget_blocked.h"
#include "tests/unit/controllers/fixtures.h"

namespace hb::controllers {
namespace {

using namespace hb::controllers::testing;

int series(const std::string& text, const std::string& family) {
  int n = 0;
  for (std::size_t at = text.find("\n" + family + "{"); at != std::string::npos;
       at = text.find("\n" + family + "{", at + 1)) {
    ++n;
  }
  return n;
}

AgentMetricRow team_row(const std::string& name, double spend_cents,
                        std::optional<double> budget_cents) {
  AgentMetricRow row;
  row.ns = "team-a";
  row.name = name;
  row.spend_cents = spend_cents;
  row.budget_cents = budget_cents;
  return row;
}

TEST(AgentMetrics, RowsSayThisMonthsSpendTheBudgetAndTheLastRun) {
  Json a = agent();
  a["spec"]["budget"] = {{"monthlyCents", 500}};
  a["status"] = {{"spend", {{"period", "2024-05"}, {"cents", 120.5}}},
                 {"lastHeartbeatTime", "2024-05-01T12:06:00Z"}};
  AgentMetricRow row = agent_metric_row(a, at("2024-05-20T00:00:00Z"));
  EXPECT_EQ(row.ns, "ns");
  EXPECT_EQ(row.name, "bot");
  EXPECT_EQ(row.spend_cents, 120.5);
  EXPECT_EQ(row.budget_cents, 500);
  EXPECT_EQ(row.last_run_finished, at("2024-05-01T12:06:00Z"));
  // Last month's spend is not this month's; no budget is no series.
  a["spec"].erase("budget");
  row = agent_metric_row(a, at("2024-06-01T00:00:00Z"));
  EXPECT_EQ(row.spend_cents, 0);
  EXPECT_FALSE(row.budget_cents);
}

// What the silence, budget and provider-quota alerts read: the next
// heartbeat the operator promises, and whether a budget or a quota holds.
TEST(AgentMetrics, RowsSayTheNextHeartbeatAndTheHolds) {
  Json a = agent();
  a["status"] = {{"nextHeartbeatTime", "2024-05-01T12:10:00Z"},
                 {"conditions",
                  {{{"type", "BudgetExceeded"}, {"status", "True"}},
                   {{"type", "ProviderThrottled"}, {"status", "False"}}}}};
  AgentMetricRow row = agent_metric_row(a, at("2024-05-01T12:07:00Z"));
  EXPECT_EQ(row.next_heartbeat, at("2024-05-01T12:10:00Z"));
  EXPECT_TRUE(row.budget_exceeded);
  EXPECT_FALSE(row.provider_throttled);
  a["status"] = {{"conditions", {{{"type", "ProviderThrottled"}, {"status", "True"}}}}};
  row = agent_metric_row(a, at("2024-05-01T12:07:00Z"));
  EXPECT_FALSE(row.next_heartbeat);  // paused or awaiting approval: no time is promised
  EXPECT_FALSE(row.budget_exceeded);
  EXPECT_TRUE(row.provider_throttled);

  Metrics m;
  describe_operator_metrics(m);
  row.next_heartbeat = at("2024-05-01T12:10:00Z");
  export_agent_metrics(m, {row}, 1);
  const Labels labels = {{"namespace", "ns"}, {"agent", "bot"}};
  EXPECT_EQ(m.value("heartbeat_agent_next_heartbeat_timestamp_seconds", labels),
            static_cast<double>(schedule::unix_seconds(at("2024-05-01T12:10:00Z"))));
  EXPECT_EQ(m.value("heartbeat_agent_provider_throttled", labels), 1);
  EXPECT_EQ(m.value("heartbeat_agent_budget_exceeded", labels), 0);
  // No promised time, no series (the overdue alert cannot fire on it).
  row.next_heartbeat.reset();
  export_agent_metrics(m, {row}, 1);
  EXPECT_EQ(series(m.render(), "heartbeat_agent_next_heartbeat_timestamp_seconds"), 0);
}

TEST(AgentMetrics, ExportedUpToTheBoundAndForgottenWithTheirAgents) {
  Metrics m;
  describe_operator_metrics(m);
  std::vector<AgentMetricRow> rows;
  for (int i = 0; i < 3; ++i) {
    rows.push_back(team_row("bot-" + std::to_string(i), 10.0 * i, 100));
  }
  for (const AgentMetricRow& r : rows) {
    m.counter_add(kAgentRunsMetric, agent_run_labels(r.ns, r.name, "Succeeded"));
  }
  m.counter_add(kAgentRunsMetric, agent_run_labels("team-a", "deleted", "Failed"));
  export_agent_metrics(m, rows, 3);
  std::string text = m.render();
  EXPECT_EQ(series(text, "heartbeat_agent_spend_cents"), 3);
  EXPECT_EQ(series(text, "heartbeat_agent_budget_cents"), 3);
  EXPECT_EQ(series(text, "heartbeat_agent_runs_total"), 3);  // the deleted agent's is gone
  EXPECT_EQ(series(text, "heartbeat_agent_provider_throttled"), 3);
  EXPECT_EQ(m.value("heartbeat_agent_spend_cents", {{"namespace", "team-a"}, {"agent", "bot-2"}}),
            20);
  // One agent more than the bound: no per-agent series at all.
  rows.push_back(team_row("bot-3", 1, std::nullopt));
  export_agent_metrics(m, rows, 3);
  text = m.render();
  for (const char* family :
       {"heartbeat_agent_spend_cents", "heartbeat_agent_budget_cents", "heartbeat_agent_runs_total",
        "heartbeat_agent_budget_exceeded", "heartbeat_agent_provider_throttled",
        "heartbeat_agent_next_heartbeat_timestamp_seconds"}) {
    EXPECT_EQ(series(text, family), 0) << family;
    EXPECT_NE(text.find(std::string("# TYPE ") + family), std::string::npos) << family;
  }
  // 0 turns them off.
  rows.resize(1);
  export_agent_metrics(m, rows, 0);
  EXPECT_EQ(series(m.render(), "heartbeat_agent_spend_cents"), 0);
}

// Two series for any fleet, moved by each agent's pass and by its deletion.
TEST(AgentMetrics, BudgetBlockedAgentsAreCountedByReason) {
  Metrics m;
  describe_operator_metrics(m);
  BudgetBlockedTally tally(m);
  const Labels awaiting = {{"reason", "AwaitingApproval"}};
  const Labels next_month = {{"reason", "BudgetExceeded"}};
  EXPECT_EQ(m.value(kBudgetBlockedMetric, awaiting), 0);
  EXPECT_EQ(m.value(kBudgetBlockedMetric, next_month), 0);
  tally.record("a/one", "AwaitingApproval");
  tally.record("a/two", "AwaitingApproval");
  tally.record("a/three", "BudgetExceeded");
  tally.record("a/four", "");
  EXPECT_EQ(m.value(kBudgetBlockedMetric, awaiting), 2);
  EXPECT_EQ(m.value(kBudgetBlockedMetric, next_month), 1);
  tally.record("a/two", "BudgetExceeded");  // released within its month
  tally.record("a/one", "");                // raised
  tally.forget("a/three");                  // deleted
  EXPECT_EQ(m.value(kBudgetBlockedMetric, awaiting), 0);
  EXPECT_EQ(m.value(kBudgetBlockedMetric, next_month), 1);
  EXPECT_EQ(series(m.render(), kBudgetBlockedMetric), 2);
}

}  // namespace
}  // namespace hb::controllers
