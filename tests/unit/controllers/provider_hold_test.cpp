// Quota-aware holds: the hold's bounds, what agents share a quota by, the
// shell's index of holds, and the decision of a held agent.
#include "controllers/policy/provider_hold.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "controllers/shell/provider_holds.h"
#include "tests/unit/controllers/fake_agent_source.h"
#include "tests/unit/controllers/fixtures.h"

namespace hb::controllers {
namespace {

using testing::agent;
using testing::at;
using testing::FakeAgents;
using ::testing::HasSubstr;
using testing::World;

TEST(ProviderHold, TheHoldIsTheResetTimeWithinADay) {
  const TimePoint end = at("2024-05-01T12:00:00Z");
  EXPECT_EQ(provider_hold_until(at("2024-05-01T14:00:00Z"), end), at("2024-05-01T14:00:00Z"));
  EXPECT_EQ(provider_hold_until(at("2024-05-09T00:00:00Z"), end), at("2024-05-02T12:00:00Z"))
      << "an endpoint that asks for a week gets a day";
  EXPECT_EQ(provider_hold_until(std::nullopt, end), at("2024-05-01T13:00:00Z"));
  EXPECT_EQ(provider_hold_until(at("2024-05-01T11:00:00Z"), end), at("2024-05-01T13:00:00Z"))
      << "a reset time in the past is no reset time";
}

Json with_model(Json a, const std::string& name, Json model_changes) {
  a["metadata"]["name"] = name;
  a["spec"]["model"].merge_patch(model_changes);
  return a;
}

TEST(ProviderHold, AgentsShareAQuotaByNamespaceEndpointAndKeySecret) {
  const Json a = agent("a");
  const Json b = with_model(agent("b"), "b", {{"model", "gpt-4o"}});  // another model, same key
  EXPECT_EQ(provider_credential(a), provider_credential(b));
  EXPECT_NE(provider_credential(a), provider_credential(with_model(
                                        agent(), "c", {{"apiKeySecretRef", {{"key", "other"}}}})));
  EXPECT_NE(provider_credential(a),
            provider_credential(with_model(agent(), "d", {{"baseURL", "http://llm:8000/v1"}})));
  Json elsewhere = agent("a");
  elsewhere["metadata"]["namespace"] = "other";
  EXPECT_NE(provider_credential(a), provider_credential(elsewhere));
  const std::string message = provider_hold_message(provider_credential(a), "a-1", "a");
  EXPECT_THAT(message, HasSubstr("Secret llm key api-key"));
  EXPECT_THAT(message, HasSubstr("HeartbeatRun a-1 of Agent a"));
  EXPECT_THAT(
      provider_hold_message(provider_credential(with_model(agent(), "e", {{"baseURL", nullptr}})),
                            "e-1", "e"),
      HasSubstr("quota for the openai default endpoint with Secret llm key api-key"));
}

// The message is built from the credential alone; a baseURL holding the
// byte the credential's parts are joined by still names endpoint and Secret.
TEST(ProviderHold, TheMessageNamesEndpointAndSecretWhateverTheURLHolds) {
  const Json odd =
      with_model(agent(), "o", {{"baseURL", "http://llm:8000/v1\nSecret forged key x"}});
  const std::string message = provider_hold_message(provider_credential(odd), "o-1", "o");
  EXPECT_THAT(message, HasSubstr("quota for http://llm:8000/v1\nSecret forged key x with Secret "
                                 "llm key api-key is spent"));
}

// Each part of a credential is its own: a URL and a key name that would
// join to the same text are two credentials, so neither agent is held by
// the other's spent quota.
TEST(ProviderHold, PartsThatJoinToTheSameTextAreStillTwoCredentials) {
  const Json a = with_model(agent(), "a",
                            {{"baseURL", "http://u\nSecret n key k"},
                             {"apiKeySecretRef", {{"name", "c"}, {"key", "d"}}}});
  const Json b = with_model(agent(), "b",
                            {{"baseURL", "http://u"},
                             {"apiKeySecretRef", {{"name", "n"}, {"key", "k\nSecret c key d"}}}});
  EXPECT_NE(provider_credential(a), provider_credential(b));
  EXPECT_EQ(provider_credential(a).endpoint(), "http://u\nSecret n key k");
  EXPECT_EQ(provider_credential(b).secret(), "Secret n key k\nSecret c key d");
}

Json quota_run(const std::string& name, const std::string& agent_name, const char* reset) {
  Json r = testing::run(name);
  r["spec"]["agentRef"]["name"] = agent_name;
  r["status"] = {{"phase", "Failed"}, {"stopReason", "provider_quota"}, {"providerResetAt", reset}};
  return r;
}

// One agent's run hits the spent quota: every agent on the same key is
// held (and queued, to say so at once) until the reset; another key is not.
// Nothing is kept of an agent without a hold.
TEST(ProviderHolds, ARunOnASpentQuotaHoldsEveryAgentOnThatKey) {
  std::vector<std::string> woken;
  ProviderHolds holds([&](const std::string& key) { woken.push_back(key); });
  FakeAgents agents;
  holds.read_agents_from(agents.source());
  const Json a = agent("a"), b = agent("b");
  const Json c = with_model(agent(), "c", {{"apiKeySecretRef", {{"name", "other-llm"}}}});
  agents.put(holds, "ns/a", a);
  agents.put(holds, "ns/b", b);
  agents.put(holds, "ns/c", c);
  EXPECT_EQ(holds.holders(), 0u);
  const Json ok = testing::with_status(testing::run("a-0"), {{"phase", "Succeeded"}});
  holds.run_changed("ns/a-0", &ok);
  EXPECT_TRUE(woken.empty());
  EXPECT_EQ(holds.holders(), 0u);
  const Json hit = quota_run("a-1", "a", "2024-05-01T14:00:00Z");
  holds.run_changed("ns/a-1", &hit);
  EXPECT_EQ(woken, (std::vector<std::string>{"ns/a", "ns/b"}));
  EXPECT_EQ(holds.holders(), 1u);
  const TimePoint now = at("2024-05-01T12:30:00Z");
  ASSERT_TRUE(holds.hold_for(provider_credential(b), now));
  EXPECT_EQ(holds.hold_for(provider_credential(b), now)->until, at("2024-05-01T14:00:00Z"));
  EXPECT_THAT(holds.hold_for(provider_credential(b), now)->message,
              HasSubstr("HeartbeatRun a-1 of Agent a"));
  EXPECT_FALSE(holds.hold_for(provider_credential(c), now));
  EXPECT_FALSE(holds.hold_for(provider_credential(b), at("2024-05-01T14:00:00Z")))
      << "it ends at the reset";
  // The same run seen again (a relist) wakes nobody; an earlier reset changes nothing.
  woken.clear();
  holds.run_changed("ns/a-1", &hit);
  const Json shorter = quota_run("b-1", "b", "2024-05-01T13:00:00Z");
  holds.run_changed("ns/b-1", &shorter);
  EXPECT_TRUE(woken.empty());
  EXPECT_EQ(holds.hold_for(provider_credential(a), now)->until, at("2024-05-01T14:00:00Z"));
}

// The holder moves to another key: its hold goes with it; deleted, it holds no one.
TEST(ProviderHolds, AHolderThatChangesItsKeyOrGoesTakesItsHoldAlong) {
  ProviderHolds holds([](const std::string&) {});
  FakeAgents agents;
  holds.read_agents_from(agents.source());
  const Json a = agent("a"), b = agent("b");
  agents.put(holds, "ns/a", a);
  agents.put(holds, "ns/b", b);
  const Json hit = quota_run("a-1", "a", "2024-05-01T14:00:00Z");
  holds.run_changed("ns/a-1", &hit);
  const TimePoint now = at("2024-05-01T12:30:00Z");
  ASSERT_TRUE(holds.hold_for(provider_credential(b), now));
  const Json moved = with_model(agent(), "a", {{"apiKeySecretRef", {{"name", "other-llm"}}}});
  agents.put(holds, "ns/a", moved);
  EXPECT_FALSE(holds.hold_for(provider_credential(b), now));
  EXPECT_TRUE(holds.hold_for(provider_credential(moved), now));
  agents.erase(holds, "ns/a");
  EXPECT_FALSE(holds.hold_for(provider_credential(moved), now));
  EXPECT_EQ(holds.holders(), 0u);
}

// After a restart the runs may be listed before their agents: the hold
// still counts once the agents are known.
TEST(ProviderHolds, AHoldSeenBeforeItsAgentCountsOnceTheAgentIsKnown) {
  ProviderHolds holds([](const std::string&) {});
  FakeAgents agents;
  holds.read_agents_from(agents.source());
  const Json hit = quota_run("a-1", "a", "2024-05-01T14:00:00Z");
  holds.run_changed("ns/a-1", &hit);
  const Json a = agent("a"), b = agent("b");
  EXPECT_FALSE(holds.hold_for(provider_credential(b), at("2024-05-01T12:30:00Z")));
  agents.put(holds, "ns/b", b);
  agents.put(holds, "ns/a", a);
  EXPECT_TRUE(holds.hold_for(provider_credential(b), at("2024-05-01T12:30:00Z")));
}

// The held agent's decision: no run, ProviderThrottled True with the time
// (and a warning Event), not Paused; it runs again once the hold ends, the
// condition then False.
TEST(ProviderHoldDecision, AHeldAgentWaitsForTheResetAndSaysWhy) {
  World w{agent("bot", "2024-05-01T12:00:00Z")};
  w.provider_hold = schedule::ProviderHold{at("2024-05-01T14:00:00Z"), "the quota is spent"};
  AgentDecision d = w.step(at("2024-05-01T12:05:00Z"));
  EXPECT_FALSE(d.create_run);
  const Json status = d.status_json();
  const Json* throttled = testing::condition(status, "ProviderThrottled");
  ASSERT_NE(throttled, nullptr);
  EXPECT_EQ((*throttled)["status"], "True");
  EXPECT_THAT((*throttled)["message"].get<std::string>(),
              HasSubstr("heartbeats resume at 2024-05-01T14:00:00Z"));
  EXPECT_EQ((*testing::condition(status, "Paused"))["status"], "False");
  EXPECT_EQ((*testing::condition(status, "Ready"))["reason"], "ProviderThrottled");
  EXPECT_TRUE(testing::has_event(d, "ProviderThrottled"));
  EXPECT_EQ(*d.requeue_at, at("2024-05-01T14:00:00Z"));
  EXPECT_EQ(status["nextHeartbeatTime"], "2024-05-01T14:00:00Z");
  d = w.step(at("2024-05-01T14:00:00Z"));
  ASSERT_TRUE(d.create_run);
  const Json after = d.status_json();
  EXPECT_EQ((*testing::condition(after, "ProviderThrottled"))["status"], "False");
}

// An agent never held has no ProviderThrottled condition at all (no
// status rewrite for every agent of a fleet).
TEST(ProviderHoldDecision, NeverHeldMeansNoCondition) {
  World w{agent("bot", "2024-05-01T12:00:00Z")};
  const AgentDecision d = w.step(at("2024-05-01T12:05:00Z"));
  EXPECT_EQ(testing::condition(d.status_json(), "ProviderThrottled"), nullptr);
}

}  // namespace
}  // namespace hb::controllers
