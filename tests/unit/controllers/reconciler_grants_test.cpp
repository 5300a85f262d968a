// Ownership before grants, through the real AgentReconciler: with a memory
// ConfigMap or a Lease of the agent's names that someone else owns, no
// ServiceAccount, Role or RoleBinding is made, the grants an older operator
// made for it are deleted, and the Agent says ObjectInTheWay naming it. The
// positive control makes all five and marks the Lease last.
#include <gtest/gtest.h>

#include <map>

#include "controllers/pod/job_builder.h"
#include "controllers/shell/agent_reconciler.h"
#include "kube/client.h"
#include "tests/unit/controllers/fixtures.h"
#include "tests/unit/controllers/scripted_reconciler.h"

namespace hb::controllers {
namespace {

using testing::at;

Json owned_by_uid(const std::string& kind, const std::string& name, const std::string& uid) {
  return {{"kind", kind},
          {"metadata",
           {{"name", name},
            {"namespace", "ns"},
            {"uid", "uid-of-" + name},
            {"ownerReferences",
             Json::array({{{"kind", "Agent"}, {"uid", uid}, {"controller", true}}})}}}};
}

// POSTs and GETs answered by a part of the URL (POST: else 201 with the
// body echoed; GET: else 404); every other write echoes its body.
class ScriptedApi final : public http::Client {
 public:
  std::vector<http::Request> requests;
  std::map<std::string, http::Response> post_answers, get_answers;
  http::Response send(const http::Request& r) override {
    requests.push_back(r);
    auto scripted =
        [&](const std::map<std::string, http::Response>& answers) -> std::optional<http::Response> {
      for (const auto& [part, answer] : answers) {
        if (r.url.find(part) != std::string::npos) return answer;
      }
      return std::nullopt;
    };
    if (r.method == "GET") {
      return scripted(get_answers)
          .value_or(http::Response{404, {}, R"({"kind":"Status","code":404,"reason":"NotFound"})"});
    }
    if (r.method == "POST") {
      if (auto answer = scripted(post_answers)) return *answer;
    }
    Json body = Json::parse(r.body, nullptr, false);
    if (!body.is_object()) body = Json::object();
    body["metadata"]["uid"] = "uid-made";
    body["metadata"]["resourceVersion"] = "300";
    return {r.method == "POST" ? 201 : 200, {}, body.dump()};
  }
  http::Response stream(const http::Request&, const http::ChunkHandler&) override {
    return {200, {}, ""};
  }
  void exists(const std::string& plural, const Json& object) {
    post_answers["/" + plural] = {
        409, {}, R"({"kind":"Status","code":409,"reason":"AlreadyExists"})"};
    get_answers["/" + plural + "/" + string_at(object, "metadata/name")] = {200, {}, object.dump()};
  }
  std::vector<std::string> writes() const {
    std::vector<std::string> out;
    for (const http::Request& r : requests) {
      if (r.method == "GET") continue;
      const std::string path = r.url.substr(r.url.find("/namespaces/ns/") + 15);
      out.push_back(r.method + " " + path);
    }
    return out;
  }
  const http::Request* last(const std::string& method, const std::string& part) const {
    for (auto it = requests.rbegin(); it != requests.rend(); ++it) {
      if (it->method == method && it->url.find(part) != std::string::npos) return &*it;
    }
    return nullptr;
  }
};

struct Harness {
  testing::FakeView view;
  std::shared_ptr<ScriptedApi> api = std::make_shared<ScriptedApi>();
  Metrics metrics;
  std::chrono::steady_clock::time_point steady{std::chrono::hours(7)};
  std::unique_ptr<AgentReconciler> reconciler;
  Harness() {
    view.agents_by_name["bot"] = testing::agent("bot", "2024-05-01T12:00:00Z");
    reconciler = testing::reconciler_over(api, view, metrics, at("2024-05-01T12:01:00Z"),
                                          [this] { return steady; });
  }
  // Two passes: the first finds the object, the second reports it.
  void reconcile_twice() {
    for (int i = 0; i < 2; ++i) {
      const auto result = reconciler->reconcile("ns", "bot");
      ASSERT_TRUE(result.ok()) << result.error().describe();
    }
  }
  std::string status_written() const {
    const http::Request* put = api->last("PUT", "/agents/bot/status");
    return put == nullptr ? "" : put->body;
  }
};

const std::vector<std::string> kNoGrant = {"POST serviceaccounts", "POST roles",
                                           "POST rolebindings"};

void expect_no_grant_made(const ScriptedApi& api) {
  for (const std::string& write : api.writes()) {
    for (const std::string& grant : kNoGrant) EXPECT_NE(write, grant);
  }
}

TEST(ReconcilerGrants, TheControlMakesAllFiveAndMarksTheLeaseLast) {
  Harness h;
  ASSERT_TRUE(h.reconciler->reconcile("ns", "bot").ok());
  EXPECT_EQ(h.api->writes(), (std::vector<std::string>{
                                 "POST configmaps", "POST leases", "POST serviceaccounts",
                                 "POST roles", "POST rolebindings", "PATCH leases/bot-heartbeat"}));
  EXPECT_NE(h.api->requests.back().body.find(kAnnotationAgentObjectsMade), std::string::npos);
}

TEST(ReconcilerGrants, AForeignMemoryConfigMapGetsNoGrantAndIsNamed) {
  Harness h;
  h.api->exists("configmaps", owned_by_uid("ConfigMap", "bot-memory", "uid-someone-else"));
  h.reconcile_twice();
  expect_no_grant_made(*h.api);
  EXPECT_EQ(h.api->last("POST", "/leases"), nullptr) << "stops at the first object in the way";
  EXPECT_EQ(h.api->last("DELETE", "/"), nullptr) << "no grant of this Agent's was there";
  const std::string status = h.status_written();
  EXPECT_NE(status.find("ObjectInTheWay"), std::string::npos) << status;
  EXPECT_NE(status.find("ConfigMap ns/bot-memory"), std::string::npos) << status;
}

TEST(ReconcilerGrants, AForeignLeaseGetsNoGrantAndIsNamed) {
  Harness h;
  h.api->exists("leases", owned_by_uid("Lease", "bot-heartbeat", "uid-someone-else"));
  h.reconcile_twice();
  expect_no_grant_made(*h.api);
  EXPECT_NE(h.api->last("POST", "/configmaps"), nullptr);
  const std::string status = h.status_written();
  EXPECT_NE(status.find("ObjectInTheWay"), std::string::npos) << status;
  EXPECT_NE(status.find("Lease ns/bot-heartbeat"), std::string::npos) << status;
}

// A Lease someone made and pointed at the Agent without marking the
// reference controller is not the Agent's (anyone may write such a reference).
TEST(ReconcilerGrants, AReferenceThatIsNotControllerIsNotOwnership) {
  Harness h;
  Json lease = owned_by_uid("Lease", "bot-heartbeat", "uid-bot");
  lease["metadata"]["ownerReferences"][0]["controller"] = false;
  h.api->exists("leases", lease);
  h.reconcile_twice();
  expect_no_grant_made(*h.api);
  EXPECT_NE(h.status_written().find("Lease ns/bot-heartbeat"), std::string::npos);
}

// An older operator made the grants before it found the ConfigMap foreign.
TEST(ReconcilerGrants, GrantsLeftForAForeignObjectAreDeletedOnce) {
  Harness h;
  h.api->exists("configmaps", owned_by_uid("ConfigMap", "bot-memory", "uid-someone-else"));
  Json role =
      build_agent_objects(parse_agent_spec(h.view.agents_by_name["bot"]).spec, JobConfig{})[3]
          .second;
  Json binding =
      build_agent_objects(parse_agent_spec(h.view.agents_by_name["bot"]).spec, JobConfig{})[4]
          .second;
  role["metadata"]["uid"] = "uid-role";
  binding["metadata"]["uid"] = "uid-binding";
  h.api->get_answers["/roles/bot-runner"] = {200, {}, role.dump()};
  h.api->get_answers["/rolebindings/bot-runner"] = {200, {}, binding.dump()};
  h.reconcile_twice();
  expect_no_grant_made(*h.api);
  std::vector<std::string> deletes;
  for (const std::string& w : h.api->writes()) {
    if (w.rfind("DELETE", 0) == 0) deletes.push_back(w);
  }
  EXPECT_EQ(deletes, (std::vector<std::string>{"DELETE rolebindings/bot-runner",
                                               "DELETE roles/bot-runner"}));
  EXPECT_NE(h.api->last("DELETE", "/roles/")->body.find("uid-role"), std::string::npos)
      << "conditional on the Role read";
  EXPECT_NE(h.status_written().find("ConfigMap ns/bot-memory"), std::string::npos);
  EXPECT_EQ(h.metrics.value("heartbeat_api_writes_total", {{"kind", kWriteAgentGrantDelete}}), 2);

  // Looked at again a minute later: still in the way, nothing read or
  // deleted about the grants again.
  h.api->requests.clear();
  h.steady += kObjectInTheWayRecheck + std::chrono::seconds(1);
  ASSERT_TRUE(h.reconciler->reconcile("ns", "bot").ok());
  EXPECT_NE(h.api->last("POST", "/configmaps"), nullptr) << "the recheck ran";
  EXPECT_EQ(h.api->last("GET", "/roles/"), nullptr);
  EXPECT_EQ(h.api->last("DELETE", "/"), nullptr);
}

// In all-namespaces mode an Agent in a namespace the operator never manages
// is not reconciled: no read, no write but one Event saying why, and the
// wakeup path does not find it. The control in another namespace writes.
TEST(ReconcilerNamespaces, AnAgentInASystemNamespaceGetsOneEventAndNothingElse) {
  Harness h;
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(h.reconciler->reconcile("kube-system", "bot").ok());
  std::vector<std::string> sent;
  for (const http::Request& r : h.api->requests) sent.push_back(r.method + " " + r.url);
  ASSERT_EQ(sent.size(), 1u) << ::testing::PrintToString(sent);
  EXPECT_EQ(h.api->requests[0].method, "POST");
  EXPECT_NE(h.api->requests[0].url.find("/events"), std::string::npos);
  EXPECT_NE(h.api->requests[0].body.find(kReasonNamespaceNotManaged), std::string::npos);
  EXPECT_NE(h.api->requests[0].body.find("kube-system"), std::string::npos);
  EXPECT_FALSE(h.reconciler->agent("kube-system", "bot"));
  EXPECT_TRUE(h.reconciler->agent("ns", "bot"));
  ASSERT_TRUE(h.reconciler->reconcile("ns", "bot").ok());
  EXPECT_GT(h.api->requests.size(), 1u);
}

}  // namespace
}  // namespace hb::controllers
