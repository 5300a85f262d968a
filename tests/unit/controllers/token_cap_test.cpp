// budget.perRunTokens (pricing.h effective_per_run_tokens): the run's cap is
// the smallest non-zero of the Agent's and the selecting valid policies',
// the runner is told it in the context document, and an Agent whose cap fits
// no model call is SpecValid=False naming the field.
#include <gtest/gtest.h>

#include "controllers/agent/agent_decision.h"
#include "controllers/pod/job_builder.h"
#include "controllers/spend/pricing.h"
#include "tests/unit/controllers/fixtures.h"

namespace hb::controllers {
namespace {

using testing::at;

PolicySpec token_policy(const char* name, Json tokens) {
  return parse_policy({{"metadata", {{"namespace", "ns"}, {"name", name}}},
                       {"spec", {{"budget", {{"perRunTokens", std::move(tokens)}}}}}});
}

AgentSpec agent_capped(int64_t tokens) {
  AgentSpec a;
  a.per_run_tokens = tokens;
  return a;
}

TEST(TokenCap, TheSmallestNonZeroOfAgentAndPolicies) {
  const std::vector<PolicySpec> team = {token_policy("wide", 80000), token_policy("tight", 30000),
                                        token_policy("none", 0)};
  ASSERT_TRUE(team[0].valid() && team[1].valid() && team[2].valid());
  EXPECT_EQ(effective_per_run_tokens(agent_capped(50000), team), 30000);  // a policy's
  EXPECT_EQ(effective_per_run_tokens(agent_capped(20000), team), 20000);  // the agent's
  EXPECT_EQ(effective_per_run_tokens(agent_capped(0), team), 30000);      // 0: no cap of its own
  EXPECT_EQ(effective_per_run_tokens(agent_capped(50000), {}), 50000);
  EXPECT_FALSE(effective_per_run_tokens(agent_capped(0), {token_policy("none", 0)}).has_value());
}

TEST(TokenCap, AnInvalidPolicyContributesNothing) {
  PolicySpec broken = token_policy("broken", 1000);
  broken.errors.push_back("spec.selector: broken");
  EXPECT_EQ(effective_per_run_tokens(agent_capped(50000), {broken}), 50000);
  EXPECT_FALSE(effective_per_run_tokens(agent_capped(0), {broken}).has_value());
  // Positive control: the same policy, valid, caps the run.
  EXPECT_EQ(effective_per_run_tokens(agent_capped(50000), {token_policy("ok", 1000)}), 1000);
}

TEST(TokenCap, APolicyCapOutOfRangeIsAnErrorNamingTheField) {
  for (Json bad : {Json(-1), Json("10k"), Json(int64_t{2000000000})}) {
    const PolicySpec p = token_policy("team", bad);
    ASSERT_FALSE(p.valid()) << bad;
    EXPECT_NE(join_errors(p.errors).find("spec.budget.perRunTokens"), std::string::npos);
  }
}

TEST(TokenCap, TheRunnerIsToldTheCap) {
  Json a = testing::agent();
  const Json r = testing::run("r1");
  const ContextInput in{nullptr, nullptr, "Heartbeat.", {}, at("2024-05-01T12:05:00Z")};
  EXPECT_FALSE(testing::render_stored(a, r, in, JobConfig{})["budget"].contains("perRunTokens"));
  EXPECT_EQ(
      testing::render_stored(a, r, in, JobConfig{}, std::nullopt, 30000)["budget"]["perRunTokens"],
      30000);
  a["spec"]["budget"]["perRunTokens"] = 50000;  // unset: the Agent's own
  EXPECT_EQ(testing::render_stored(a, r, in, JobConfig{})["budget"]["perRunTokens"], 50000);
  const AgentSpec spec = parse_agent_spec(a).spec;
  const StartingRun started = starting_run(r);
  ContextInput typed = in;
  typed.agent = &spec;
  typed.run = &started;
  EXPECT_EQ(context_document(typed, JobConfig{}, std::nullopt, 30000).budget.per_run_tokens, 30000);
}

TEST(TokenCap, ACapBelowMaxTokensIsSpecInvalidNamingTheField) {
  Json a = testing::agent();
  a["spec"]["model"]["maxTokens"] = 4096;
  a["spec"]["budget"]["perRunTokens"] = 4096;  // control: exactly one call's output fits
  ASSERT_TRUE(parse_agent_spec(a).valid()) << parse_agent_spec(a).message();
  EXPECT_EQ(parse_agent_spec(a).spec.per_run_tokens, 4096);
  a["spec"]["budget"]["perRunTokens"] = 0;  // no cap
  ASSERT_TRUE(parse_agent_spec(a).valid()) << parse_agent_spec(a).message();
  a["spec"]["budget"]["perRunTokens"] = 4095;
  const SpecCheck check = parse_agent_spec(a);
  ASSERT_FALSE(check.valid());
  EXPECT_EQ(check.errors.size(), 1u);
  EXPECT_EQ(check.errors[0].rfind("spec.budget.perRunTokens: 4095", 0), 0u) << check.message();
  EXPECT_NE(check.message().find("spec.model.maxTokens (4096)"), std::string::npos);
  a["spec"]["budget"]["perRunTokens"] = -5;
  EXPECT_NE(parse_agent_spec(a).message().find("spec.budget.perRunTokens"), std::string::npos);

  // The decision: SpecValid=False and no run.
  a["spec"]["budget"]["perRunTokens"] = 100;
  testing::World w{a};
  AgentDecision d = w.step(at("2024-05-01T12:05:00Z"));
  EXPECT_FALSE(d.create_run);
  EXPECT_FALSE(d.start_run);
  const Json status = d.status_json();
  ASSERT_NE(testing::condition(status, kConditionSpecValid), nullptr);
  EXPECT_EQ((*testing::condition(status, kConditionSpecValid))["status"], "False");
  EXPECT_NE((*testing::condition(status, kConditionSpecValid))["message"].get<std::string>().find(
                "spec.budget.perRunTokens"),
            std::string::npos);
}

}  // namespace
}  // namespace hb::controllers
