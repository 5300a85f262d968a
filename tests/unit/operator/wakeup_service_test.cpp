// The wakeup endpoint as a tenant meets it (operator/wakeup.h): a token opens
// its own namespace only, every "no" is the same 404, and buckets bound the
// wakeups per source, namespace and agent. The backend is a fake: agents in
// a map, runs made in memory.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "kube/request_priority.h"
#include "operator/wakeup.h"

namespace hb::operator_ {
namespace {

using namespace std::chrono_literals;
using controllers::Json;

const std::string kTokenA = "team-a-token-0123456789abcdef";
const std::string kTokenB = "team-b-token-0123456789abcdef";
const std::string kClusterToken = "cluster-wide-token-0123456789";

Json agent_object(const std::string& ns, const std::string& name) {
  return {{"apiVersion", "heartbeat.dev/v1alpha1"},
          {"kind", "Agent"},
          {"metadata", {{"namespace", ns}, {"name", name}, {"uid", "uid-" + ns + "-" + name}}},
          {"spec", {{"heartbeat", {{"prompt", "Heartbeat."}}}}}};
}

struct Fixture {
  std::map<std::string, Json> agents;  // "ns/name"
  std::map<std::string, std::string> tokens{{"team-a", kTokenA}, {"team-b", kTokenB}};
  bool cluster_token_on = false;
  std::vector<std::string> created;  // "ns/run name"
  std::vector<kube::RequestPriority> create_priorities;
  std::vector<bool> create_give_way_set;
  std::set<std::string> token_reads;
  kube::ErrorKind create_error = kube::ErrorKind::kOther;
  bool fail_creates = false;
  std::chrono::steady_clock::time_point now{};
  WakeupLimits limits;
  std::unique_ptr<WakeupService> service;

  Fixture() {
    agents["team-a/bot"] = agent_object("team-a", "bot");
    agents["team-a/other"] = agent_object("team-a", "other");
    agents["team-b/bot"] = agent_object("team-b", "bot");
  }

  WakeupService& svc() {
    if (service) return *service;
    WakeupBackend backend{
        [this](const std::string& ns, const std::string& name) -> std::optional<Json> {
          auto it = agents.find(ns + "/" + name);
          if (it == agents.end()) return std::nullopt;
          return it->second;
        },
        [this](const std::string& ns, const Json& run) -> kube::Result<Json> {
          create_priorities.push_back(kube::current_request_priority());
          create_give_way_set.push_back(kube::current_give_way_time().has_value());
          if (fail_creates) {
            kube::Error e;
            e.kind = create_error;
            return e;
          }
          Json made = run;
          std::string name = controllers::string_at(run, "metadata/name");
          if (name.empty()) {
            name = controllers::string_at(run, "metadata/generateName") +
                   std::to_string(created.size());
          }
          made["metadata"]["name"] = name;
          created.push_back(ns + "/" + name);
          return made;
        },
        [](const std::string&, const std::string&) -> kube::Result<Json> {
          kube::Error e;
          e.kind = kube::ErrorKind::kNotFound;
          return e;
        },
        [] { return std::chrono::system_clock::time_point{} + 1'800'000'000s; }};
    WakeupAuth auth{[this](const std::string& ns) -> std::optional<TokenDigest> {
                      token_reads.insert(ns);
                      auto it = tokens.find(ns);
                      if (it == tokens.end()) return std::nullopt;
                      return token_digest(it->second);
                    },
                    [this]() -> std::optional<TokenDigest> {
                      if (!cluster_token_on) return std::nullopt;
                      return token_digest(kClusterToken);
                    }};
    service = std::make_unique<WakeupService>(
        std::move(backend), std::move(auth), [](const std::string&) {}, [] { return true; }, limits,
        [this] { return now; });
    return *service;
  }

  http::ServerResponse post(const std::string& ns, const std::string& name,
                            const std::string& token, const std::string& source = "10.0.0.1") {
    http::ServerRequest r;
    r.method = "POST";
    r.path = "/api/v1/namespaces/" + ns + "/agents/" + name + "/wakeup";
    r.remote_address = source;
    if (!token.empty()) r.headers["authorization"] = "Bearer " + token;
    r.body = R"({"reason":"test"})";
    return svc().handle(r);
  }
};

std::string header(const http::ServerResponse& r, const std::string& name) {
  for (const auto& [n, v] : r.headers) {
    if (n == name) return v;
  }
  return "";
}

TEST(WakeupTenancy, ANamespacesTokenWakesItsOwnAgents) {
  Fixture f;
  const auto woke = f.post("team-a", "bot", kTokenA);
  EXPECT_EQ(woke.status, 201) << woke.body;
  ASSERT_EQ(f.created.size(), 1u);
  EXPECT_EQ(f.created[0].rfind("team-a/bot-callback-", 0), 0u) << f.created[0];
}

TEST(WakeupTenancy, ANamespacesTokenCannotWakeAnotherNamespacesAgent) {
  Fixture f;
  const auto refused = f.post("team-b", "bot", kTokenA);
  EXPECT_EQ(refused.status, 404) << refused.body;
  EXPECT_TRUE(f.created.empty());
  // Positive control: the agent exists and B's own token wakes it.
  EXPECT_EQ(f.post("team-b", "bot", kTokenB).status, 201);
  EXPECT_EQ(f.created.size(), 1u);
}

TEST(WakeupTenancy, EveryNoIsTheSame404) {
  Fixture f;
  f.tokens.erase("team-b");  // team-b has no Secret
  const http::ServerResponse answers[] = {
      f.post("team-a", "ghost", kTokenA),                 // no such agent (with the right token)
      f.post("team-a", "bot", ""),                        // no token
      f.post("team-a", "bot", "wrong-token-0123456789"),  // a wrong one
      f.post("team-a", "bot", kTokenB),                   // another namespace's
      f.post("team-b", "bot", kTokenB),                   // a namespace without a Secret
      f.post("team-b", "bot", ""),
      f.post("team-c", "ghost", kTokenA),  // a namespace that does not exist
      f.post("Team_A", "bot", kTokenA),    // not a namespace name
  };
  for (const auto& a : answers) {
    EXPECT_EQ(a.status, answers[0].status) << a.body;
    EXPECT_EQ(a.body, answers[0].body);
    EXPECT_EQ(a.headers, answers[0].headers);
    EXPECT_EQ(a.content_type, answers[0].content_type);
  }
  EXPECT_EQ(answers[0].status, 404);
  EXPECT_TRUE(f.created.empty());
}

TEST(WakeupTenancy, TheTokenIsCheckedBeforeTheAgentIsLookedUp) {
  Fixture f;
  // The namespace's token is read for an agent that exists and one that does
  // not alike: the work done does not depend on the agent.
  f.post("team-b", "ghost", "");
  EXPECT_EQ(f.token_reads.count("team-b"), 1u);
  f.token_reads.clear();
  f.post("team-b", "bot", "");
  EXPECT_EQ(f.token_reads.count("team-b"), 1u);
}

TEST(WakeupTenancy, TheClusterWideTokenOnlyWhenConfigured) {
  Fixture f;
  EXPECT_EQ(f.post("team-a", "bot", kClusterToken).status, 404);
  f.cluster_token_on = true;
  EXPECT_EQ(f.post("team-a", "bot", kClusterToken).status, 201);
  EXPECT_EQ(f.post("team-b", "bot", kClusterToken).status, 201);
  EXPECT_EQ(f.post("team-a", "bot", kTokenA).status, 201);  // namespace tokens still work
}

TEST(WakeupBuckets, PerAgent429WithRetryAfterAndOtherAgentsUnaffected) {
  Fixture f;
  const int burst = static_cast<int>(f.limits.per_agent.burst);
  for (int i = 0; i < burst; ++i) ASSERT_EQ(f.post("team-a", "bot", kTokenA).status, 201) << i;
  const auto limited = f.post("team-a", "bot", kTokenA);
  EXPECT_EQ(limited.status, 429) << limited.body;
  EXPECT_EQ(header(limited, "Retry-After"), "2");  // 0.5 a second
  EXPECT_EQ(f.created.size(), static_cast<size_t>(burst));
  // Another agent, in the same namespace and from the same source: served.
  EXPECT_EQ(f.post("team-a", "other", kTokenA).status, 201);
  EXPECT_EQ(f.post("team-b", "bot", kTokenB).status, 201);
  // Once the bucket refills, served again.
  f.now += 2s;
  EXPECT_EQ(f.post("team-a", "bot", kTokenA).status, 201);
}

TEST(WakeupBuckets, PerSourceBoundsEveryRequestEvenWithoutAToken) {
  Fixture f;
  f.limits.per_source = {/*per_second=*/1, /*burst=*/3};
  for (int i = 0; i < 3; ++i) EXPECT_EQ(f.post("team-a", "bot", "", "10.0.0.9").status, 404);
  const auto limited = f.post("team-a", "bot", kTokenA, "10.0.0.9");
  EXPECT_EQ(limited.status, 429);
  EXPECT_EQ(header(limited, "Retry-After"), "1");
  // Another source is served.
  EXPECT_EQ(f.post("team-a", "bot", kTokenA, "10.0.0.10").status, 201);
}

TEST(WakeupBuckets, PerNamespaceBoundsAllOfItsAgentsTogether) {
  Fixture f;
  f.limits.per_namespace = {/*per_second=*/1, /*burst=*/2};
  EXPECT_EQ(f.post("team-a", "bot", kTokenA).status, 201);
  EXPECT_EQ(f.post("team-a", "other", kTokenA).status, 201);
  EXPECT_EQ(f.post("team-a", "bot", kTokenA).status, 429);
  EXPECT_EQ(f.post("team-b", "bot", kTokenB).status, 201);  // another tenant
}

TEST(WakeupPriority, CreatesRunBelowTheAgentsOwnWritesAndGiveWay) {
  Fixture f;
  ASSERT_EQ(f.post("team-a", "bot", kTokenA).status, 201);
  ASSERT_EQ(f.create_priorities.size(), 1u);
  EXPECT_EQ(f.create_priorities[0].cls, kube::RequestClass::kEdge);
  EXPECT_TRUE(f.create_give_way_set[0]);
  // A create that gave way in the limiter is a 503 to retry, not a 502.
  f.fail_creates = true;
  f.create_error = kube::ErrorKind::kGaveWay;
  const auto busy = f.post("team-a", "other", kTokenA);
  EXPECT_EQ(busy.status, 503) << busy.body;
  EXPECT_EQ(header(busy, "Retry-After"), std::to_string(kLimiterRetryAfterSeconds));
  // Outside a request the thread's class is as before.
  EXPECT_EQ(kube::current_request_priority().cls, kube::RequestClass::kLifecycle);
}

TEST(WakeupPaths, OnlyKubernetesNamesReachALookup) {
  EXPECT_TRUE(parse_wakeup_path("/api/v1/namespaces/team-a/agents/bot.v2/wakeup"));
  EXPECT_FALSE(parse_wakeup_path("/api/v1/namespaces/team a/agents/bot/wakeup"));
  EXPECT_FALSE(parse_wakeup_path("/api/v1/namespaces/team-a/agents/bot\r\nX: y/wakeup"));
  EXPECT_FALSE(parse_wakeup_path("/api/v1/namespaces/-a/agents/bot/wakeup"));
  EXPECT_FALSE(
      parse_wakeup_path("/api/v1/namespaces/" + std::string(64, 'a') + "/agents/b/wakeup"));
  EXPECT_FALSE(parse_wakeup_path("/api/v1/namespaces/a/agents/B/wakeup"));
  EXPECT_FALSE(parse_wakeup_path("/api/v1/namespaces/a/agents/a..b/wakeup"));
}

}  // namespace
}  // namespace hb::operator_
