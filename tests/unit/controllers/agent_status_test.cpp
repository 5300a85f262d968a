// The typed Agent status and view: parsed once per stored version, rendered
// only to write, and judged "canonical" only when rendering gives the stored
// JSON back (otherwise the next decision rewrites it).
#include "controllers/model/agent_status.h"

#include <gtest/gtest.h>

#include "controllers/agent/agent_decision.h"
#include "controllers/agent/agent_view.h"
#include "tests/unit/controllers/fixtures.h"

namespace hb::controllers {
namespace {

using namespace testing;

// A status as the decision writes it, after one finished run.
Json settled_status() {
  World w{agent()};
  w.step(at("2024-05-01T12:05:00Z"));
  w.finish("bot-1714565100", at("2024-05-01T12:06:00Z"), 1.25);
  w.step(at("2024-05-01T12:06:01Z"));
  return w.agent["status"];
}

TEST(AgentStatus, WhatTheDecisionWritesParsesBackCanonicalAndRendersTheSame) {
  const Json stored = settled_status();
  ASSERT_TRUE(stored.contains("recentRuns"));
  ASSERT_EQ(stored["recentRuns"].size(), 1u);
  const ParsedAgentStatus parsed = parse_agent_status(&stored);
  EXPECT_TRUE(parsed.canonical);
  EXPECT_EQ(to_json(parsed.status), stored);
  EXPECT_EQ(parsed.status.spend->cents, 1.25);
  EXPECT_EQ(parsed.status.capabilities, api::AgentType::kMemgpt);
  ASSERT_NE(parsed.status.conditions, nullptr);
  EXPECT_EQ(parsed.status.conditions->size(), 6u);
}

TEST(AgentStatus, AbsentIsCanonicalAndEmpty) {
  const ParsedAgentStatus parsed = parse_agent_status(nullptr);
  EXPECT_TRUE(parsed.canonical);
  EXPECT_EQ(to_json(parsed.status), Json::object());
  const Json not_an_object = "nonsense";
  EXPECT_FALSE(parse_agent_status(&not_an_object).canonical);
}

TEST(AgentStatus, NumbersEqualButTypedDifferentlyStayCanonical) {
  Json stored = settled_status();
  stored["spend"]["cents"] = 2;  // the API server gives 2 for 2.0
  stored["recentRuns"][0]["costCents"] = 2;
  const ParsedAgentStatus parsed = parse_agent_status(&stored);
  EXPECT_TRUE(parsed.canonical);
  EXPECT_EQ(parsed.status.spend->cents, 2.0);
}

TEST(AgentStatus, WrongTypesUnknownFieldsAndForeignCapabilitiesAreNotCanonical) {
  const Json good = settled_status();
  for (auto edit : std::vector<std::function<void(Json&)>>{
           [](Json& s) { s["phase"] = 3; },
           [](Json& s) { s["lastScheduleTime"] = "yesterday"; },
           [](Json& s) { s["unknown"] = true; },
           [](Json& s) { s["conditions"][0]["extra"] = 1; },
           [](Json& s) { s["capabilities"]["maxIterations"] = 999; },
           [](Json& s) { s["spend"].erase("inputTokens"); },
       }) {
    Json stored = good;
    edit(stored);
    EXPECT_FALSE(parse_agent_status(&stored).canonical) << stored.dump();
  }
}

TEST(AgentStatus, EqualityComparesListsByContentAndSharesNothingItNeedNot) {
  const Json stored = settled_status();
  const AgentStatus a = parse_agent_status(&stored).status;
  const AgentStatus b = parse_agent_status(&stored).status;
  EXPECT_NE(a.conditions, b.conditions);  // separate parses: separate lists
  EXPECT_TRUE(a == b);
  AgentStatus c = b;
  EXPECT_EQ(c.conditions, b.conditions);  // a copy shares them
  auto changed = std::make_shared<std::vector<Condition>>(*c.conditions);
  (*changed)[0].message = "different";
  c.conditions = changed;
  EXPECT_FALSE(a == c);
  c = b;
  c.recent_runs = nullptr;
  EXPECT_FALSE(a == c);
}

TEST(AgentView, SpecChecksThatNeedTheClusterAreAddedAtDecisionTime) {
  Json a = agent();
  a["spec"]["model"]["provider"] = "gemini";
  const AgentView view = view_agent(a);
  ASSERT_EQ(view.spec.errors.size(), 1u);  // the provider only: the cluster is not known here
  SpecEnvironment env;
  env.object_in_the_way = "ConfigMap ns/a-memory";
  const std::vector<std::string> errors = spec_errors(view.spec, env);
  ASSERT_EQ(errors.size(), 2u);
  EXPECT_NE(errors[0].find("spec.model.provider"), std::string::npos);
  EXPECT_NE(errors[1].find("ConfigMap ns/a-memory"), std::string::npos);
  EXPECT_EQ(check_agent_spec(a, env).errors, errors);
}

TEST(AgentView, ReadsTheInvokeAnnotationAndResourceVersion) {
  Json a = agent();
  EXPECT_FALSE(view_agent(a).invoke);
  a["metadata"]["annotations"] = {{"heartbeat.dev/invoke", ""}};
  const AgentView view = view_agent(a);
  ASSERT_TRUE(view.invoke);
  EXPECT_EQ(*view.invoke, "");
  EXPECT_EQ(view.resource_version, "100");
}

// Deciding from a view gives what deciding from the object gives.
TEST(AgentView, DecidingFromTheViewEqualsDecidingFromTheObject) {
  World w{agent()};
  w.step(at("2024-05-01T12:05:00Z"));
  w.finish("bot-1714565100", at("2024-05-01T12:06:00Z"), 0.5);
  const TimePoint now = at("2024-05-01T12:10:00Z");
  AgentDecisionInput from_json;
  from_json.agent = &w.agent;
  from_json.runs = observe_all(w.runs, now);
  from_json.now = now;
  const AgentView view = view_agent(w.agent);
  AgentDecisionInput from_view = from_json;
  from_view.agent = nullptr;
  from_view.view = &view;
  const AgentDecision a = decide_agent(from_json);
  const AgentDecision b = decide_agent(from_view);
  EXPECT_EQ(a.status_json(), b.status_json());
  EXPECT_EQ(a.status_changed, b.status_changed);
  EXPECT_EQ(a.mark, b.mark);
  ASSERT_TRUE(a.create_run && b.create_run);
  EXPECT_EQ(a.create_run->name, b.create_run->name);
  EXPECT_EQ(a.requeue_at, b.requeue_at);
}

}  // namespace
}  // namespace hb::controllers
