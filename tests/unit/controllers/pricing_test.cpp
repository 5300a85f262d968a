// Prices a HeartbeatPolicy sets (pricing.h): which price a run is charged
// at and what status.charge records, what a policy refuses to run
// (requirePricing, forbidSelfReportedUsage), and the tenant who zeroes the
// Agent's price under a pricing policy. Each refusal has a positive control:
// the same agent without the policy runs.
#include "controllers/spend/pricing.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "controllers/pod/job_builder.h"
#include "controllers/run/run_status.h"
#include "controllers/shell/policy_index.h"
#include "tests/unit/controllers/fake_agent_source.h"
#include "tests/unit/controllers/fixtures.h"

namespace hb::controllers {
namespace {

using testing::at;
using testing::FakeAgents;
using ::testing::HasSubstr;

Json price(const char* provider, const char* model, double in, double out) {
  return {{"provider", provider},
          {"model", model},
          {"inputCentsPerMillionTokens", in},
          {"outputCentsPerMillionTokens", out}};
}

PolicySpec pricing_policy(const char* name, Json prices, Json more = Json::object()) {
  Json spec = std::move(more);
  spec["pricing"] = std::move(prices);
  PolicySpec p = parse_policy(
      {{"metadata", {{"namespace", "ns"}, {"name", name}}}, {"spec", std::move(spec)}});
  EXPECT_TRUE(p.valid()) << join_errors(p.errors);
  return p;
}

AgentSpec agent_spec(double in, double out, const char* model = "gpt-4o-mini") {
  AgentSpec a;
  a.provider = "openai";
  a.model = model;
  a.pricing = {in, out};
  return a;
}

TEST(Pricing, TheHigherOfAgentAndPolicyPerFieldAndTheRecordSaysWhose) {
  const std::vector<PolicySpec> team = {
      pricing_policy("team", Json::array({price("openai", "gpt-4o-mini", 1000, 8000)}))};
  EffectivePricing e = effective_pricing(agent_spec(2000, 5000), team);
  EXPECT_DOUBLE_EQ(e.pricing.input_cents_per_million_tokens, 2000);   // the agent's, higher
  EXPECT_DOUBLE_EQ(e.pricing.output_cents_per_million_tokens, 8000);  // the policy's, higher
  EXPECT_EQ(e.source, "both");
  EXPECT_EQ(e.policy, "ns/team");
  e = effective_pricing(agent_spec(100, 100), team);
  EXPECT_EQ(e.source, "policy");
  EXPECT_DOUBLE_EQ(e.pricing.input_cents_per_million_tokens, 1000);
  e = effective_pricing(agent_spec(5000, 9000), team);
  EXPECT_EQ(e.source, "agent");
  EXPECT_EQ(e.policy, "");
  // No policy: the agent's price, whatever it is.
  e = effective_pricing(agent_spec(0, 0), {});
  EXPECT_EQ(e.source, "agent");
  EXPECT_FALSE(e.priced);
}

TEST(Pricing, AnExactModelBeatsTheWildcardAndTheHighestPolicyWins) {
  const PolicySpec p = pricing_policy(
      "team", Json::array({price("openai", "*", 500, 500), price("openai", "gpt-4o-mini", 100, 100),
                           price("anthropic", "*", 9000, 9000)}));
  EffectivePricing e = effective_pricing(agent_spec(0, 0), {p});
  EXPECT_DOUBLE_EQ(e.pricing.input_cents_per_million_tokens, 100);  // exact, though lower
  e = effective_pricing(agent_spec(0, 0, "gpt-4o"), {p});
  EXPECT_DOUBLE_EQ(e.pricing.input_cents_per_million_tokens, 500);  // the provider's "*"
  // Several policies: the highest price, recorded by its policy.
  const PolicySpec dear = pricing_policy("dear", Json::array({price("openai", "*", 700, 700)}));
  e = effective_pricing(agent_spec(0, 0), {dear, p});
  EXPECT_DOUBLE_EQ(e.pricing.output_cents_per_million_tokens, 700);
  EXPECT_EQ(e.policy, "ns/dear");
}

TEST(Pricing, BadPricesMakeThePolicyInvalidNamingTheFieldAndItPricesNothing) {
  const PolicySpec bad = parse_policy(
      {{"metadata", {{"namespace", "ns"}, {"name", "bad"}}},
       {"spec",
        {{"pricing",
          Json::array({price("openai", "*", -1, 10), price("ollama", "llama3", 1, 1),
                       price("anthropic", "claude", 1, 1), price("anthropic", "claude", 2, 2)})},
         {"requirePricing", "yes"}}}});
  ASSERT_EQ(bad.errors.size(), 4u) << join_errors(bad.errors);
  EXPECT_THAT(bad.errors[0], HasSubstr("spec.requirePricing: must be true or false"));
  EXPECT_THAT(bad.errors[1], HasSubstr("spec.pricing[0].inputCentsPerMillionTokens: must be"));
  EXPECT_THAT(bad.errors[2], HasSubstr("spec.pricing[1].provider \"ollama\""));
  EXPECT_THAT(bad.errors[3], HasSubstr("spec.pricing[3]: a second price"));
  const Json status =
      desired_policy_status(bad, nullptr, {1, 0, 0, "2024-05"}, at("2024-05-10T10:00:00Z"));
  EXPECT_EQ(status["conditions"][0]["status"], "False");
  EXPECT_THAT(status["conditions"][0]["message"].get<std::string>(),
              HasSubstr("spec.pricing[0].inputCentsPerMillionTokens"));
  const EffectivePricing e = effective_pricing(agent_spec(1, 1), {bad});
  EXPECT_EQ(e.source, "agent");
  EXPECT_DOUBLE_EQ(e.pricing.input_cents_per_million_tokens, 1);
}

// The shell's index hands a policy's prices to the agents it selects only.
TEST(Pricing, APolicyPricesOnlyTheAgentsItSelects) {
  PolicyIndex index([](const std::string&) {});
  FakeAgents agents;
  index.read_agents_from(agents.source());
  const Json in_team = {
      {"metadata", {{"namespace", "ns"}, {"name", "a"}, {"labels", {{"team", "x"}}}}}};
  const Json other = {
      {"metadata", {{"namespace", "ns"}, {"name", "b"}, {"labels", {{"team", "y"}}}}}};
  agents.put(index, "ns/a", in_team);
  agents.put(index, "ns/b", other);
  const Json p = {
      {"metadata", {{"namespace", "ns"}, {"name", "team-x"}, {"generation", 1}, {"uid", "u"}}},
      {"spec",
       {{"selector", {{"matchLabels", {{"team", "x"}}}}},
        {"pricing", Json::array({price("openai", "*", 300, 600)})}}}};
  index.policy_changed(nullptr, &p);
  EffectivePricing e = effective_pricing(agent_spec(0, 0), index.policies_over("ns/a"));
  EXPECT_DOUBLE_EQ(e.pricing.output_cents_per_million_tokens, 600);
  EXPECT_EQ(e.policy, "ns/team-x");
  e = effective_pricing(agent_spec(0, 0), index.policies_over("ns/b"));
  EXPECT_DOUBLE_EQ(e.pricing.output_cents_per_million_tokens, 0);
  EXPECT_EQ(e.source, "agent");
}

// A finished run, observed as the shell observes it with the effective price.
RunObservation finish_run(const AgentSpec& spec, const std::vector<PolicySpec>& policies) {
  static const Json r = testing::with_status(
      testing::run("r1"),
      {{"phase", "Running"}, {"jobName", "r1"}, {"startedAt", "2024-05-01T12:05:00Z"}});
  static const Json j = testing::job("r1");
  static const Json p =
      testing::terminated(testing::pod("r1-abc"), 0, testing::result_json(0, 1000, 200));
  const EffectivePricing e = effective_pricing(spec, policies);
  RunObservationInput in;
  in.run = &r;
  in.job = &j;
  in.pods = {&p};
  in.now = at("2024-05-01T12:06:10Z");
  in.timeouts = {std::chrono::seconds(300), std::chrono::seconds(30), std::chrono::seconds(120)};
  in.pricing = e.pricing;
  in.pricing_source = e.source;
  in.pricing_policy = e.policy;
  in.provider = spec.provider;
  in.model = spec.model;
  in.bounds = usage_bounds(AgentSpec{});
  return observe_run(in);
}

// The tenant's attack: spec.model.pricing set to 0 under a pricing policy.
TEST(Pricing, AnAgentPricedZeroUnderAPricingPolicyIsChargedThePolicysPrice) {
  const std::vector<PolicySpec> team = {
      pricing_policy("team", Json::array({price("openai", "*", 1000, 10000)}))};
  RunObservation o = finish_run(agent_spec(0, 0), team);
  ASSERT_TRUE(o.became_final);
  EXPECT_DOUBLE_EQ(o.status["usage"]["costCents"], 3.0);  // 1000 x 0.001 + 200 x 0.01
  EXPECT_EQ(o.status["charge"]["source"], "policy");
  EXPECT_EQ(o.status["charge"]["policy"], "ns/team");
  EXPECT_EQ(o.status["charge"]["outputCentsPerMillionTokens"], 10000);
  // Positive control: without the policy the same run costs 0.
  o = finish_run(agent_spec(0, 0), {});
  EXPECT_EQ(o.status["usage"]["costCents"], 0);
  EXPECT_EQ(o.status["charge"]["source"], "agent");
  EXPECT_FALSE(o.status["charge"].contains("policy"));
}

// The runner's per-run stop is told the price the operator charges.
TEST(Pricing, TheRunnerIsToldTheEffectivePrice) {
  const Json a = testing::agent();
  const Json r = testing::run("r1");
  const ContextInput in{nullptr, nullptr, "Heartbeat.", {}, at("2024-05-01T12:05:00Z")};
  const Json doc = testing::render_stored(a, r, in, JobConfig{}, Pricing{1000, 10000});
  EXPECT_EQ(doc["model"]["pricing"]["inputCentsPerMillionTokens"], 1000);
  EXPECT_EQ(doc["model"]["pricing"]["outputCentsPerMillionTokens"], 10000);
  EXPECT_EQ(testing::render_stored(a, r, in,
                                   JobConfig{})["model"]["pricing"]["inputCentsPerMillionTokens"],
            0);
  // The cache prices as charged: the input price when nobody set one.
  EXPECT_EQ(doc["model"]["pricing"]["cachedInputCentsPerMillionTokens"], 1000);
  EXPECT_EQ(doc["model"]["pricing"]["cacheWriteInputCentsPerMillionTokens"], 1000);
  const Json cached =
      testing::render_stored(a, r, in, JobConfig{}, Pricing{1000, 10000, 100, 1250});
  EXPECT_EQ(cached["model"]["pricing"]["cachedInputCentsPerMillionTokens"], 100);
  EXPECT_EQ(cached["model"]["pricing"]["cacheWriteInputCentsPerMillionTokens"], 1250);
}

const Json* ready_of(const AgentDecision& d) {
  static Json status;
  status = d.status_json();
  return testing::condition(status, "Ready");
}

TEST(Pricing, RequirePricingHoldsAnUnpricedModelAndNotAPricedOne) {
  const Json require = {{"requirePricing", true}};
  testing::World w{testing::agent("bot", "2024-05-10T10:00:00Z")};
  w.policies = {pricing_policy("team", Json::array({price("anthropic", "*", 1, 1)}), require)};
  AgentDecision d = w.step(at("2024-05-10T10:05:00Z"));
  EXPECT_FALSE(d.create_run);
  EXPECT_FALSE(d.start_run);
  ASSERT_NE(ready_of(d), nullptr);
  EXPECT_EQ((*ready_of(d))["status"], "False");
  EXPECT_EQ((*ready_of(d))["reason"], "PricingRequired");
  EXPECT_THAT((*ready_of(d))["message"].get<std::string>(), HasSubstr("HeartbeatPolicy team"));
  EXPECT_THAT((*ready_of(d))["message"].get<std::string>(), HasSubstr("\"gpt-4o-mini\""));
  // A price for the model (here the policy's) lets the next slot run.
  w.policies = {
      pricing_policy("team", Json::array({price("openai", "gpt-4o-mini", 1, 1)}), require)};
  d = w.step(at("2024-05-10T10:06:00Z"));
  EXPECT_TRUE(d.create_run);
  // Positive control: the same unpriced agent without requirePricing runs.
  testing::World free{testing::agent("bot", "2024-05-10T10:00:00Z")};
  free.policies = {pricing_policy("team", Json::array({price("anthropic", "*", 1, 1)}))};
  EXPECT_TRUE(free.step(at("2024-05-10T10:05:00Z")).create_run);
}

TEST(Pricing, ForbidSelfReportedUsageHoldsCommandModeAndForeignImages) {
  const Json forbid = {{"forbidSelfReportedUsage", true}};
  Json command = testing::agent("bot", "2024-05-10T10:00:00Z");
  command["spec"]["runtime"]["mode"] = "command";
  command["spec"]["runtime"]["image"] = "heartbeat-runner:test";
  command["spec"]["runtime"]["command"] = Json::array({"/bin/agent"});
  testing::World w{command};
  w.policies = {pricing_policy("team", Json::array(), forbid)};
  AgentDecision d = w.step(at("2024-05-10T10:05:00Z"));
  EXPECT_FALSE(d.create_run);
  EXPECT_EQ((*ready_of(d))["reason"], "SelfReportedUsage");
  EXPECT_THAT((*ready_of(d))["message"].get<std::string>(),
              HasSubstr("spec.runtime.mode is command"));
  Json foreign = testing::agent("bot", "2024-05-10T10:00:00Z");
  foreign["spec"]["runtime"]["image"] = "evil/runner:1";
  testing::World f{foreign};
  f.policies = w.policies;
  d = f.step(at("2024-05-10T10:05:00Z"));
  EXPECT_FALSE(d.create_run);
  EXPECT_THAT((*ready_of(d))["message"].get<std::string>(),
              HasSubstr("spec.runtime.image \"evil/runner:1\" is not the operator's"));
  // The operator's own image, named or not, runs.
  Json own = testing::agent("bot", "2024-05-10T10:00:00Z");
  own["spec"]["runtime"]["image"] = "heartbeat-runner:test";
  testing::World o{own};
  o.policies = w.policies;
  EXPECT_TRUE(o.step(at("2024-05-10T10:05:00Z")).create_run);
  // Positive control: the command-mode agent without the policy runs.
  testing::World free{command};
  EXPECT_TRUE(free.step(at("2024-05-10T10:05:00Z")).create_run);
}

// A manual run of a refused agent waits Queued, told why.
TEST(Pricing, AManualRunOfARefusedAgentWaitsQueuedSayingWhy) {
  Json a = testing::agent("bot", "2024-05-10T10:00:00Z");
  a["metadata"]["annotations"][kAnnotationInvoke] = "now";
  testing::World w{a};
  w.policies = {pricing_policy("team", Json::array(), {{"requirePricing", true}})};
  w.step(at("2024-05-10T10:01:00Z"));
  ASSERT_EQ(w.runs.size(), 1u);
  const AgentDecision d = w.step(at("2024-05-10T10:01:01Z"));
  EXPECT_FALSE(d.start_run);
  const Json& status = w.runs[0]["status"];
  EXPECT_EQ(status["phase"], "Queued") << status.dump();
  EXPECT_THAT(status["message"].get<std::string>(), HasSubstr("requires a price"));
}

}  // namespace
}  // namespace hb::controllers
