// HeartbeatPolicy: the label selector, the policy's parse (errors name the
// field), its desired status, and the shell's index of what it counts.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "controllers/model/label_selector.h"
#include "controllers/policy/policy_status.h"
#include "controllers/shell/concurrency_gate.h"
#include "controllers/shell/policy_index.h"
#include "controllers/spend/ledger_record.h"
#include "tests/unit/controllers/fake_agent_source.h"
#include "tests/unit/controllers/fixtures.h"

namespace hb::controllers {
namespace {

using testing::at;
using testing::FakeAgents;
using ::testing::HasSubstr;

LabelSelector selector(const char* json) {
  const Json j = Json::parse(json);
  SelectorParse p = parse_label_selector(&j, "spec.selector");
  EXPECT_TRUE(p.errors.empty()) << p.errors.front();
  return p.selector;
}

std::vector<std::string> selector_errors(const char* json) {
  const Json j = Json::parse(json);
  return parse_label_selector(&j, "spec.selector").errors;
}

TEST(LabelSelector, EmptyOrAbsentSelectsEverything) {
  EXPECT_TRUE(selector_matches(selector("{}"), {}));
  EXPECT_TRUE(selector_matches(parse_label_selector(nullptr, "s").selector, {{"a", "b"}}));
}

TEST(LabelSelector, MatchLabelsAndEveryOperator) {
  const LabelSelector s = selector(R"({"matchLabels": {"team": "a"},
    "matchExpressions": [{"key": "tier", "operator": "In", "values": ["gold", "silver"]},
                         {"key": "env", "operator": "NotIn", "values": ["dev"]},
                         {"key": "owner", "operator": "Exists"},
                         {"key": "legacy", "operator": "DoesNotExist"}]})");
  const std::map<std::string, std::string> yes = {
      {"team", "a"}, {"tier", "gold"}, {"env", "prod"}, {"owner", "x"}};
  EXPECT_TRUE(selector_matches(s, yes));
  auto without = [&](const char* key) {
    auto l = yes;
    l.erase(key);
    return l;
  };
  auto with = [&](const char* key, const char* value) {
    auto l = yes;
    l[key] = value;
    return l;
  };
  EXPECT_FALSE(selector_matches(s, with("team", "b")));
  EXPECT_FALSE(selector_matches(s, with("tier", "bronze")));
  EXPECT_FALSE(selector_matches(s, without("tier")));
  EXPECT_FALSE(selector_matches(s, with("env", "dev")));
  EXPECT_TRUE(selector_matches(s, without("env")));  // NotIn holds for an absent label
  EXPECT_FALSE(selector_matches(s, without("owner")));
  EXPECT_FALSE(selector_matches(s, with("legacy", "")));
}

// Hostile or mistaken selectors: each error names the field and the fix.
TEST(LabelSelector, BadSelectorsNameTheField) {
  EXPECT_THAT(selector_errors(R"("team=a")")[0], HasSubstr("spec.selector: must be a label"));
  EXPECT_THAT(selector_errors(R"({"matchLabels": {"team": 7}})")[0],
              HasSubstr("spec.selector.matchLabels.team: must be a label value"));
  EXPECT_THAT(selector_errors(R"({"matchLabels": {"bad key!": "a"}})")[0],
              HasSubstr("not a valid label key"));
  EXPECT_THAT(selector_errors(R"({"matchExpressions": [{"key": "a", "operator": "Near"}]})")[0],
              HasSubstr("spec.selector.matchExpressions[0].operator: use In, NotIn"));
  EXPECT_THAT(selector_errors(R"({"matchExpressions": [{"key": "a", "operator": "In"}]})")[0],
              HasSubstr("matchExpressions[0].values: In and NotIn need 1 to 64 values"));
  EXPECT_THAT(
      selector_errors(
          R"({"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]})")[0],
      HasSubstr("must be empty for Exists"));
  EXPECT_THAT(selector_errors(R"({"matchExpressions": {"key": "a"}})")[0],
              HasSubstr("matchExpressions: must be a list"));
  Json many = {{"matchExpressions", Json::array()}};
  for (int i = 0; i < 40; ++i) {
    many["matchExpressions"].push_back({{"key", "k" + std::to_string(i)}, {"operator", "Exists"}});
  }
  const std::vector<std::string> errors = parse_label_selector(&many, "spec.selector").errors;
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_THAT(errors[0], HasSubstr("at most 32"));
}

Json policy(const char* name, Json spec) {
  return {
      {"metadata",
       {{"namespace", "ns"}, {"name", name}, {"generation", 2}, {"uid", std::string("u-") + name}}},
      {"spec", std::move(spec)}};
}

TEST(Policy, ParsesLimitsAndRejectsBadOnesByField) {
  PolicySpec p =
      parse_policy(policy("team", {{"budget", {{"monthlyCents", 500}}}, {"maxConcurrentRuns", 2}}));
  EXPECT_TRUE(p.valid());
  EXPECT_EQ(p.monthly_budget_cents, 500);
  EXPECT_EQ(p.max_concurrent_runs, 2);
  EXPECT_TRUE(p.selects({}));
  p = parse_policy(policy("bad", {{"budget", {{"monthlyCents", -1}}},
                                  {"maxConcurrentRuns", "two"},
                                  {"selector", {{"matchLabels", {{"team", "a"}}}}}}));
  ASSERT_EQ(p.errors.size(), 2u);
  EXPECT_THAT(p.errors[0], HasSubstr("spec.budget.monthlyCents: must be an integer from 0"));
  EXPECT_THAT(p.errors[1],
              HasSubstr("spec.maxConcurrentRuns: must be an integer from 0 to 100000"));
  // An invalid policy sets no limit on anyone: a typo must not stop a team.
  EXPECT_FALSE(p.selects({{"team", "a"}}));
}

const Json* condition_of(const Json& status, const char* type) {
  for (const Json& c : status["conditions"]) {
    if (c["type"] == type) return &c;
  }
  return nullptr;
}

TEST(Policy, StatusShowsCountsAndConditionsAndKeepsTransitionTimes) {
  const PolicySpec p = parse_policy(policy("team", {{"budget", {{"monthlyCents", 100}}}}));
  PolicyTally tally{2, 1, 100.25, "2024-05"};
  const Json s = desired_policy_status(p, nullptr, tally, at("2024-05-10T10:00:00Z"));
  EXPECT_EQ(s["agents"], 2);
  EXPECT_EQ(s["runningRuns"], 1);
  EXPECT_EQ(s["spend"]["cents"], 100.25);
  EXPECT_EQ(s["spend"]["period"], "2024-05");
  EXPECT_EQ(s["observedGeneration"], 2);
  EXPECT_EQ((*condition_of(s, "BudgetExceeded"))["status"], "True");
  EXPECT_EQ((*condition_of(s, "BudgetExceeded"))["reason"], "PolicyBudgetExceeded");
  EXPECT_EQ((*condition_of(s, "SelectorMatchesNothing"))["status"], "False");
  EXPECT_EQ((*condition_of(s, "Ready"))["status"], "True");
  // The same again later: identical, so the writer writes nothing.
  const Json again = desired_policy_status(p, &s, tally, at("2024-05-10T10:05:00Z"));
  EXPECT_EQ(again, s);
  tally.agents = 0;
  const Json none = desired_policy_status(p, &s, tally, at("2024-05-10T10:06:00Z"));
  EXPECT_EQ((*condition_of(none, "SelectorMatchesNothing"))["status"], "True");
  EXPECT_THAT((*condition_of(none, "SelectorMatchesNothing"))["message"].get<std::string>(),
              HasSubstr("selects no Agent of namespace ns"));
  EXPECT_EQ((*condition_of(none, "BudgetExceeded"))["lastTransitionTime"], "2024-05-10T10:00:00Z");
}

TEST(Policy, AnInvalidPolicySaysSoInReady) {
  const PolicySpec p = parse_policy(policy("bad", {{"maxConcurrentRuns", -3}}));
  const Json s =
      desired_policy_status(p, nullptr, {1, 0, 0, "2024-05"}, at("2024-05-10T10:00:00Z"));
  EXPECT_EQ((*condition_of(s, "Ready"))["status"], "False");
  EXPECT_THAT((*condition_of(s, "Ready"))["message"].get<std::string>(),
              HasSubstr("spec.maxConcurrentRuns"));
}

Json agent_with(const char* name, std::map<std::string, std::string> labels, double cents,
                const char* period = "2024-05") {
  Json a = {{"metadata", {{"namespace", "ns"}, {"name", name}, {"labels", labels}}},
            {"status", {{"spend", {{"period", period}, {"cents", cents}}}}}};
  return a;
}

// An agent's durable ledger record with `cents` charged under each of `policies`.
LedgerRecord record_of(const char* ns, const char* agent, double cents,
                       std::vector<std::string> policies, const char* period = "2024-05") {
  LedgerRecord r{ns, agent, {}, {}};
  PeriodSpend& spend = r.periods[period];
  spend.micro_cents = to_micro_cents(cents);
  for (const std::string& p : policies) spend.policy_micro_cents[p] = to_micro_cents(cents);
  return r;
}

// Told ledger records, in order (the last told per agent is the current one).
struct FakeLedger {
  std::map<std::string, LedgerRecord> records;
  void put(PolicyIndex& index, const LedgerRecord& r) {
    const std::string key = r.ns + "/" + r.agent;
    const auto it = records.find(key);
    index.ledger_changed(it == records.end() ? nullptr : &it->second, &r);
    records.insert_or_assign(key, r);
  }
};

// The team's spend is what the ledger charged under the policy's name:
// more spend raises it, a relabel or a deleted Agent moves nothing already
// spent, another namespace's policy of that name is apart, last month's
// spend does not count, and crossing the budget wakes the team.
TEST(PolicyIndex, SumsWhatTheLedgerChargedUnderThePolicy) {
  std::vector<std::string> woken;
  PolicyIndex index([&](const std::string& key) { woken.push_back(key); });
  FakeAgents agents;
  FakeLedger ledger;
  index.read_agents_from(agents.source());
  const TimePoint now = at("2024-05-10T10:00:00Z");
  agents.put(index, "ns/a", agent_with("a", {{"team", "x"}}, 0));
  agents.put(index, "ns/b", agent_with("b", {{"team", "x"}}, 0));
  agents.put(index, "ns/c", agent_with("c", {{"team", "y"}}, 0));
  const Json p = policy("team-x", {{"selector", {{"matchLabels", {{"team", "x"}}}}},
                                   {"budget", {{"monthlyCents", 100}}},
                                   {"maxConcurrentRuns", 1}});
  index.policy_changed(nullptr, &p);
  EXPECT_EQ(woken, (std::vector<std::string>{"ns/a", "ns/b"}));
  ledger.put(index, record_of("ns", "a", 30.5, {"team-x"}));
  ledger.put(index, record_of("ns", "b", 40.75, {"team-x"}));
  ledger.put(index, record_of("ns", "c", 1000, {"team-y"}));
  ledger.put(index, record_of("ns-2", "a", 999, {"team-x"}));
  std::vector<schedule::PolicyBudget> budgets = index.budgets_for("ns/a", now);
  ASSERT_EQ(budgets.size(), 1u);
  EXPECT_EQ(budgets[0].policy, "team-x");
  EXPECT_EQ(budgets[0].spent_cents, 71);  // 30.5 + 40.75, floored
  EXPECT_TRUE(index.budgets_for("ns/c", now).empty());
  const std::vector<PoolCap> caps = index.caps_for("ns/b");
  ASSERT_EQ(caps.size(), 1u);
  EXPECT_EQ(caps[0].pool, "ns/team-x");
  EXPECT_TRUE(index.caps_for("ns/c").empty());
  ledger.put(index, record_of("ns", "b", 60, {"team-x"}));
  EXPECT_EQ(index.budgets_for("ns/a", now)[0].spent_cents, 90);
  // b leaves the team by its labels, then is deleted: what it spent stays.
  agents.put(index, "ns/b", agent_with("b", {{"team", "z"}}, 0));
  EXPECT_EQ(index.budgets_for("ns/a", now)[0].spent_cents, 90);
  agents.erase(index, "ns/b");
  EXPECT_EQ(index.budgets_for("ns/a", now)[0].spent_cents, 90);
  // c, of another team, spends under team-x (stamped on its run) and
  // crosses the budget: every agent the policy selects decides again.
  woken.clear();
  ledger.put(index, record_of("ns", "c", 1010, {"team-y", "team-x"}));
  EXPECT_EQ(index.budgets_for("ns/a", now)[0].spent_cents, 1100);
  EXPECT_EQ(woken, (std::vector<std::string>{"ns/a"}));
  // Spend of last month does not count this month.
  EXPECT_EQ(index.budgets_for("ns/a", at("2024-06-01T00:00:00Z"))[0].spent_cents, 0);
}

// A team's day: what the ledger charged under the policy on the policy's
// day in its zone (spec.timeZone); an invalid zone names the field; the
// status shows the day's spend and why the budget holds.
TEST(PolicyIndex, ATeamsDayIsCountedInThePolicysZone) {
  const PolicySpec bad = parse_policy(policy("p", {{"timeZone", "Mars/Olympus"}}));
  ASSERT_FALSE(bad.valid());
  EXPECT_NE(join_errors(bad.errors).find("spec.timeZone"), std::string::npos);
  EXPECT_NE(join_errors(parse_policy(policy("p", {{"budget", {{"dailyCents", -1}}}})).errors)
                .find("spec.budget.dailyCents"),
            std::string::npos);
  std::vector<std::string> woken;
  PolicyIndex index([&](const std::string& key) { woken.push_back(key); });
  FakeAgents agents;
  FakeLedger ledger;
  index.read_agents_from(agents.source());
  agents.put(index, "ns/a", agent_with("a", {{"team", "x"}}, 0));
  const Json p = policy("team-x", {{"budget", {{"dailyCents", 10}}}, {"timeZone", "Asia/Tokyo"}});
  index.policy_changed(nullptr, &p);
  // 20:00 UTC on 2024-05-10 is 05:00 on the 11th in Tokyo.
  const TimePoint now = at("2024-05-10T20:00:00Z");
  LedgerRecord r = record_of("ns", "a", 0, {});
  r.days["2024-05-11@Asia/Tokyo"].policy_micro_cents["team-x"] = to_micro_cents(6.5);
  r.days["2024-05-10@UTC"].policy_micro_cents["team-x"] = to_micro_cents(1000);  // another zone's
  woken.clear();
  ledger.put(index, r);
  std::vector<schedule::PolicyBudget> budgets = index.budgets_for("ns/a", now);
  ASSERT_EQ(budgets.size(), 1u) << "a daily budget alone is a budget";
  EXPECT_EQ(budgets[0].daily_budget_cents, 10);
  EXPECT_EQ(budgets[0].spent_today_cents, 6);
  EXPECT_EQ(budgets[0].day, "2024-05-11@Asia/Tokyo");
  EXPECT_EQ(schedule::format_rfc3339(budgets[0].day_ends), "2024-05-11T15:00:00Z");
  EXPECT_TRUE(woken.empty()) << "not spent yet";
  r.days["2024-05-11@Asia/Tokyo"].policy_micro_cents["team-x"] = to_micro_cents(10);
  ledger.put(index, r);
  EXPECT_EQ(woken, (std::vector<std::string>{"ns/a"}))
      << "crossing the day's budget wakes its agents";
  const std::vector<PolicyIndex::Report> reports = index.reports(now, {});
  ASSERT_EQ(reports.size(), 1u);
  const Json status = desired_policy_status(reports[0].spec, nullptr, reports[0].tally, now);
  EXPECT_EQ(status["spendToday"]["day"], "2024-05-11");
  EXPECT_EQ(status["spendToday"]["timeZone"], "Asia/Tokyo");
  EXPECT_EQ(status["spendToday"]["cents"], 10.0);
  bool exceeded = false;
  for (const Json& c : status["conditions"]) {
    if (c["type"] == "BudgetExceeded") {
      exceeded = c["status"] == "True" && c["reason"] == "PolicyDailyBudgetExceeded";
    }
  }
  EXPECT_TRUE(exceeded) << status.dump();
  // Its next day counts from nothing.
  EXPECT_EQ(index.budgets_for("ns/a", at("2024-05-11T15:00:00Z"))[0].spent_today_cents, 0);
}

// A fleet without policies costs the index nothing: a namespace's Agents
// (their labels) are read when its first policy comes and forgotten with
// its last; the spend charged under a policy outlives it.
TEST(PolicyIndex, AgentsAreKeptOnlyInNamespacesWithAPolicy) {
  PolicyIndex index([](const std::string&) {});
  FakeAgents agents;
  FakeLedger ledger;
  index.read_agents_from(agents.source());
  const TimePoint now = at("2024-05-10T10:00:00Z");
  Json other_ns = agent_with("a", {{"team", "x"}}, 999);
  other_ns["metadata"]["namespace"] = "ns-2";
  agents.put(index, "ns/a", agent_with("a", {{"team", "x"}}, 30));
  agents.put(index, "ns/b", agent_with("b", {{"team", "x"}}, 12));
  agents.put(index, "ns-2/a", other_ns);
  EXPECT_EQ(index.agents_kept(), 0u);
  const Json p = policy("team-x", {{"selector", {{"matchLabels", {{"team", "x"}}}}},
                                   {"budget", {{"monthlyCents", 100}}}});
  index.policy_changed(nullptr, &p);
  EXPECT_EQ(index.agents_kept(), 2u) << "ns only";
  ledger.put(index, record_of("ns", "a", 42, {"team-x"}));
  EXPECT_EQ(index.budgets_for("ns/a", now).at(0).spent_cents, 42);
  index.policy_changed(&p, nullptr);
  EXPECT_EQ(index.agents_kept(), 0u);
  agents.put(index, "ns/a", agent_with("a", {{"team", "x"}}, 30));
  EXPECT_EQ(index.agents_kept(), 0u);
  // Back again: its agents read afresh, its spend as charged.
  index.policy_changed(nullptr, &p);
  EXPECT_EQ(index.agents_kept(), 2u);
  EXPECT_EQ(index.budgets_for("ns/a", now).at(0).spent_cents, 42);
}

// The namespace's Agents are read from a snapshot while the handlers go on
// telling changes: one deleted meanwhile is not brought back, one changed
// meanwhile keeps its newer labels.
TEST(PolicyIndex, ChangesToldWhileANamespaceIsReadWin) {
  PolicyIndex index([](const std::string&) {});
  FakeAgents agents;
  index.read_agents_from(agents.source());
  agents.put(index, "ns/a", agent_with("a", {{"team", "x"}}, 30));
  agents.put(index, "ns/b", agent_with("b", {{"team", "x"}}, 12));
  agents.put(index, "ns/c", agent_with("c", {{"team", "x"}}, 5));
  const Json c2 = agent_with("c", {{"team", "y"}}, 7);
  agents.before_visit = [&](const std::string& key) {
    if (key != "ns/a") return;
    agents.erase(index, "ns/b");
    agents.put(index, "ns/c", c2);
  };
  const Json p = policy("team-x", {{"selector", {{"matchLabels", {{"team", "x"}}}}},
                                   {"budget", {{"monthlyCents", 100}}}});
  index.policy_changed(nullptr, &p);
  EXPECT_EQ(index.agents_kept(), 2u);
  EXPECT_EQ(index.policies_selecting("ns/a"), std::vector<std::string>{"team-x"});
  EXPECT_TRUE(index.policies_selecting("ns/b").empty()) << "deleted meanwhile";
  EXPECT_TRUE(index.policies_selecting("ns/c").empty()) << "relabelled meanwhile";
}

TEST(PolicyIndex, ReportsCountAgentsAndRunningRuns) {
  PolicyIndex index([](const std::string&) {});
  FakeAgents agents;
  index.read_agents_from(agents.source());
  const Json a = agent_with("a", {{"team", "x"}}, 10);
  const Json b = agent_with("b", {{"team", "y"}}, 20);
  agents.put(index, "ns/a", a);
  agents.put(index, "ns/b", b);
  const Json p = policy("team-x", {{"selector", {{"matchLabels", {{"team", "x"}}}}}});
  index.policy_changed(nullptr, &p);
  // The gate (fed by the informers) counts the started runs; the index
  // sums them over each policy's agents.
  ConcurrencyGate gate(
      0, [] { return std::chrono::steady_clock::time_point{}; }, [](const std::string&) {},
      [&index](const std::string& agent) { return index.caps_for(agent); });
  const Json running = {{"spec", {{"agentRef", {{"name", "a"}}}}},
                        {"status", {{"phase", "Running"}}}};
  const Json queued_with_job = {{"spec", {{"agentRef", {{"name", "a"}}}}}};
  const Json done = {{"spec", {{"agentRef", {{"name", "a"}}}}},
                     {"status", {{"phase", "Succeeded"}}}};
  const Json other = {{"spec", {{"agentRef", {{"name", "b"}}}}},
                      {"status", {{"phase", "Running"}}}};
  gate.observe_run("ns/r1", &running, true);
  gate.observe_run("ns/r2", &queued_with_job, true);
  gate.observe_run("ns/r3", &done, true);
  gate.observe_run("ns/r4", &other, false);
  gate.observe_run("ns/r5", &queued_with_job, false);  // not started yet
  FakeLedger ledger;
  ledger.put(index, record_of("ns", "a", 10, {"team-x"}));
  const TimePoint now = at("2024-05-10T10:00:00Z");
  std::vector<PolicyIndex::Report> reports = index.reports(now, gate.started_by_agent());
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].tally.agents, 1);
  EXPECT_EQ(reports[0].tally.running_runs, 2);
  EXPECT_EQ(reports[0].tally.spent_cents, 10);
  gate.observe_run("ns/r1", &done, true);
  gate.observe_run("ns/r2", nullptr, false);
  EXPECT_EQ(index.reports(now, gate.started_by_agent())[0].tally.running_runs, 0);
}

// A label change moves an agent between pools: the gate is told (only
// where a policy caps runs), so whoever may start now is woken.
TEST(PolicyIndex, ALabelChangeUnderACapTellsTheGate) {
  PolicyIndex index([](const std::string&) {});
  FakeAgents agents;
  index.read_agents_from(agents.source());
  int told = 0;
  index.on_limits_changed([&] { ++told; });
  const Json a = agent_with("a", {{"team", "x"}}, 10);
  agents.put(index, "ns/a", a);
  const Json spend_more = agent_with("a", {{"team", "x"}}, 20);
  agents.put(index, "ns/a", spend_more);
  const Json relabelled = agent_with("a", {{"team", "y"}}, 20);
  agents.put(index, "ns/a", relabelled);
  EXPECT_EQ(told, 0) << "no policy caps runs here";
  const Json p = policy("cap", {{"maxConcurrentRuns", 1}});
  index.policy_changed(nullptr, &p);
  EXPECT_EQ(told, 1);
  agents.put(index, "ns/a", relabelled);
  EXPECT_EQ(told, 1) << "the same labels";
  agents.put(index, "ns/a", a);
  EXPECT_EQ(told, 2);
}

TEST(PolicyIndex, AStatusOnlyUpdateWakesNobody) {
  int woken = 0;
  PolicyIndex index([&](const std::string&) { ++woken; });
  FakeAgents agents;
  index.read_agents_from(agents.source());
  const Json a = agent_with("a", {}, 10);
  agents.put(index, "ns/a", a);
  const Json p = policy("all", {{"budget", {{"monthlyCents", 100}}}});
  index.policy_changed(nullptr, &p);
  EXPECT_EQ(woken, 1);
  Json with_status = p;
  with_status["status"] = {{"agents", 1}};
  index.policy_changed(&p, &with_status);
  EXPECT_EQ(woken, 1);
  EXPECT_EQ(index.reports(at("2024-05-10T10:00:00Z"), {})[0].stored_status["agents"], 1);
  Json raised = with_status;
  raised["metadata"]["generation"] = 3;
  raised["spec"]["budget"]["monthlyCents"] = 200;
  index.policy_changed(&with_status, &raised);
  EXPECT_EQ(woken, 3);  // the agent, by the old and the new spec
  index.policy_changed(&raised, nullptr);
  EXPECT_EQ(index.size(), 0u);
  EXPECT_TRUE(index.budgets_for("ns/a", at("2024-05-10T10:00:00Z")).empty());
}

// The kill switch through the index: a paused policy reaches the agents it
// selects (and only those) with its namespace, name and cancelRunning; the
// decision then holds a manual run of a selected agent and starts the same
// run of an agent it does not select.
TEST(PolicyIndex, APausedPolicyHoldsTheAgentsItSelectsOnly) {
  PolicyIndex index([](const std::string&) {});
  FakeAgents agents;
  index.read_agents_from(agents.source());
  const TimePoint now = at("2024-05-01T12:01:00Z");
  agents.put(index, "ns/a", agent_with("a", {{"team", "x"}}, 0));
  agents.put(index, "ns/c", agent_with("c", {{"team", "y"}}, 0));
  const Json p = policy("stop-x", {{"selector", {{"matchLabels", {{"team", "x"}}}}},
                                   {"paused", true},
                                   {"cancelRunning", true}});
  index.policy_changed(nullptr, &p);
  const std::vector<schedule::PolicyBudget> over_a = index.budgets_for("ns/a", now);
  ASSERT_EQ(over_a.size(), 1u);  // no budget, yet there: it pauses
  EXPECT_TRUE(over_a[0].paused);
  EXPECT_TRUE(over_a[0].cancel_running);
  EXPECT_EQ(schedule::policy_key(over_a[0]), "ns/stop-x");
  EXPECT_TRUE(index.budgets_for("ns/c", now).empty());
  for (const char* name : {"a", "c"}) {
    testing::World w{testing::agent(name)};
    w.policy_budgets = index.budgets_for(std::string("ns/") + name, now);
    Json manual =
        testing::run(std::string(name) + "-manual", "manual", std::nullopt, "2024-05-01T12:01:00Z");
    manual["spec"]["agentRef"]["name"] = name;
    w.runs.push_back(manual);
    const AgentDecision d = w.step(now);
    if (std::string(name) == "a") {
      EXPECT_FALSE(d.start_run) << "selected: held";
      EXPECT_THAT(d.queued_messages.at(std::string(name) + "-manual"), HasSubstr("ns/stop-x"));
    } else {
      EXPECT_EQ(d.start_run, "c-manual") << "not selected: starts";
    }
  }
  // Not paused (the control): the policy without a budget is not over anyone.
  Json unpaused = p;
  unpaused["metadata"]["generation"] = 3;
  unpaused["spec"]["paused"] = false;
  index.policy_changed(&p, &unpaused);
  EXPECT_TRUE(index.budgets_for("ns/a", now).empty());
}

// An invalid policy holds nobody (as its budget limits nobody): its pause
// does not reach any agent, and its status says Paused=False and why.
TEST(Policy, AnInvalidPausedPolicyHoldsNobody) {
  PolicyIndex index([](const std::string&) {});
  FakeAgents agents;
  index.read_agents_from(agents.source());
  const TimePoint now = at("2024-05-01T12:01:00Z");
  agents.put(index, "ns/a", agent_with("a", {{"team", "x"}}, 0));
  const Json bad = policy("stop-all", {{"paused", true}, {"maxConcurrentRuns", -1}});
  index.policy_changed(nullptr, &bad);
  EXPECT_TRUE(index.budgets_for("ns/a", now).empty());
  const PolicySpec spec = parse_policy(bad);
  const Json s = desired_policy_status(spec, nullptr, {1, 0, 0, "2024-05"}, now);
  EXPECT_EQ((*condition_of(s, "Ready"))["status"], "False");
  EXPECT_EQ((*condition_of(s, "Paused"))["status"], "False");
  EXPECT_EQ((*condition_of(s, "Paused"))["reason"], "InvalidSpec");
  // A paused field that is not a boolean is an error naming it.
  EXPECT_THAT(parse_policy(policy("odd", {{"paused", "yes"}})).errors.at(0),
              HasSubstr("spec.paused: must be true or false"));
}

TEST(Policy, StatusSaysPausedAndWhatHappensToRunsInFlight) {
  const TimePoint now = at("2024-05-10T10:00:00Z");
  PolicySpec p = parse_policy(policy("team", {{"paused", true}}));
  Json s = desired_policy_status(p, nullptr, {3, 1, 0, "2024-05"}, now);
  EXPECT_EQ((*condition_of(s, "Ready"))["status"], "True");  // valid, its limits in force
  EXPECT_EQ((*condition_of(s, "Paused"))["status"], "True");
  EXPECT_EQ((*condition_of(s, "Paused"))["reason"], "PolicyPaused");
  EXPECT_THAT((*condition_of(s, "Paused"))["message"].get<std::string>(),
              HasSubstr("none of the 3 selected Agent(s) starts a heartbeat"));
  EXPECT_THAT((*condition_of(s, "Paused"))["message"].get<std::string>(),
              HasSubstr("runs in flight finish"));
  EXPECT_FALSE(parse_policy(policy("team", Json::object())).finish_on_exceeded);
  EXPECT_TRUE(parse_policy(policy("team", {{"onExceeded", "Finish"}})).finish_on_exceeded);
  EXPECT_THAT(parse_policy(policy("team", {{"onExceeded", "Later"}})).errors,
              ::testing::Contains(HasSubstr("spec.onExceeded: use Cancel or Finish")));
  p = parse_policy(policy("team", {{"paused", true}, {"cancelRunning", true}}));
  s = desired_policy_status(p, nullptr, {3, 1, 0, "2024-05"}, now);
  EXPECT_THAT((*condition_of(s, "Paused"))["message"].get<std::string>(),
              HasSubstr("cancelled (spec.cancelRunning)"));
  p = parse_policy(policy("team", Json::object()));
  s = desired_policy_status(p, nullptr, {3, 1, 0, "2024-05"}, now);
  EXPECT_EQ((*condition_of(s, "Paused"))["status"], "False");
  EXPECT_EQ((*condition_of(s, "Paused"))["reason"], "NotPaused");
}

// Each record's figure is an int64 of millionths of a cent, saturated at
// INT64_MAX for a runaway (or forged) figure. Two of them in one team must
// not wrap the team's sum negative (which would lift a spent team budget),
// and taking one away must leave the other's whole figure.
TEST(PolicyIndex, TwoSaturatedAgentsDoNotWrapTheTeamSum) {
  PolicyIndex index([](const std::string&) {});
  FakeAgents agents;
  FakeLedger ledger;
  index.read_agents_from(agents.source());
  const TimePoint now = at("2024-05-10T10:00:00Z");
  const Json p = policy("team", {{"budget", {{"monthlyCents", 100}}}});
  index.policy_changed(nullptr, &p);
  agents.put(index, "ns/a", agent_with("a", {}, 0));
  agents.put(index, "ns/b", agent_with("b", {}, 0));
  constexpr int64_t kOneSaturatedCents = INT64_MAX / 1000000;  // 9223372036854
  ledger.put(index, record_of("ns", "a", 1e20, {"team"}));
  EXPECT_EQ(index.budgets_for("ns/a", now).at(0).spent_cents, kOneSaturatedCents);
  ledger.put(index, record_of("ns", "b", 1e20, {"team"}));
  const int64_t both = index.budgets_for("ns/a", now).at(0).spent_cents;
  EXPECT_GE(both, kOneSaturatedCents);
  EXPECT_GT(index.reports(now, {}).at(0).tally.spent_cents, 0);
  // The team budget still holds.
  testing::World w{testing::agent("a")};
  w.policy_budgets = index.budgets_for("ns/a", now);
  EXPECT_FALSE(w.step(at("2024-05-10T10:05:00Z")).create_run);
  index.ledger_changed(&ledger.records.at("ns/b"), nullptr);
  EXPECT_EQ(index.budgets_for("ns/a", now).at(0).spent_cents, kOneSaturatedCents);
  ledger.put(index, record_of("ns", "a", 1.5, {"team"}));
  EXPECT_EQ(index.budgets_for("ns/a", now).at(0).spent_cents, 1);
}

}  // namespace
}  // namespace hb::controllers
