// Ownership before grants, through the real AgentReconciler: with a memory
// ConfigMap or a Lease of the agent's names that someone else owns, no
// ServiceAccount, Role or RoleBinding is made, the grants an older operator
// made for it are deleted, and the Agent says ObjectInTheWay naming it. The
// positive control makes all five and marks the Lease last. The writes are
// recorded by a fake writer; the grants' reads go through a scripted client.
#include <gtest/gtest.h>

#include <map>

#include "controllers/model/agent_grants.h"
#include "controllers/pod/job_builder.h"
#include "controllers/shell/agent_reconciler.h"
#include "kube/client.h"
#include "tests/unit/controllers/fake_agent_api_writes.h"
#include "tests/unit/controllers/fixtures.h"
#include "tests/unit/controllers/scripted_reconciler.h"

namespace hb::controllers {
namespace {

using testing::at;
using testing::FakeAgentApiWrites;
using testing::RecordingApi;
using testing::WriteCall;

Json owned_by_uid(const std::string& kind, const std::string& name, const std::string& uid) {
  return {{"kind", kind},
          {"metadata",
           {{"name", name},
            {"namespace", "ns"},
            {"uid", "uid-of-" + name},
            {"ownerReferences",
             Json::array({{{"kind", "Agent"}, {"uid", uid}, {"controller", true}}})}}}};
}

struct Harness {
  testing::FakeView view;
  std::shared_ptr<RecordingApi> api = std::make_shared<RecordingApi>();  // the reads
  std::shared_ptr<FakeAgentApiWrites> writes = std::make_shared<FakeAgentApiWrites>();
  Metrics metrics;
  std::chrono::steady_clock::time_point steady{std::chrono::hours(7)};
  std::unique_ptr<AgentReconciler> reconciler;
  Harness() {
    view.agents_by_name["bot"] = testing::agent("bot", "2024-05-01T12:00:00Z");
    reconciler = testing::reconciler_over(api, writes, view, metrics, at("2024-05-01T12:01:00Z"),
                                          [this] { return steady; });
  }
  // Two passes: the first finds the object, the second reports it.
  void reconcile_twice() {
    for (int i = 0; i < 2; ++i) {
      const auto result = reconciler->reconcile("ns", "bot");
      ASSERT_TRUE(result.ok()) << result.error().describe();
    }
  }
  // An object of that name there already: its create answers AlreadyExists.
  void exists(const Json& object) { writes->existing[name_of(object)] = object; }
  std::string status_written() const {
    for (auto it = writes->calls.rbegin(); it != writes->calls.rend(); ++it) {
      if (it->call == testing::kCallReplaceAgentStatus) return it->object.dump();
    }
    return "";
  }
  // Each write as "call kind name".
  std::vector<std::string> written() const {
    std::vector<std::string> out;
    for (const WriteCall& c : writes->calls) out.push_back(c.call + " " + c.kind + " " + c.name);
    return out;
  }
  bool created(const std::string& kind) const {
    for (const WriteCall& c : writes->calls) {
      if (c.call == testing::kCallCreateAgentObject && c.kind == kind) return true;
    }
    return false;
  }
};

void expect_no_grant_made(const Harness& h) {
  for (const char* grant : {kKindServiceAccounts, kKindRoles, kKindRoleBindings}) {
    EXPECT_FALSE(h.created(grant)) << grant;
  }
}

TEST(ReconcilerGrants, TheControlMakesAllFiveAndMarksTheLeaseLast) {
  Harness h;
  ASSERT_TRUE(h.reconciler->reconcile("ns", "bot").ok());
  const std::string create = std::string(testing::kCallCreateAgentObject) + " ";
  EXPECT_EQ(h.written(), (std::vector<std::string>{
                             create + "configmaps bot-memory", create + "leases bot-heartbeat",
                             create + "serviceaccounts bot-runner", create + "roles bot-runner",
                             create + "rolebindings bot-runner",
                             std::string(testing::kCallMarkAgentObjectsMade) + "  bot-heartbeat"}));
  EXPECT_NE(h.writes->calls.back().object.dump().find(kAnnotationAgentObjectsMade),
            std::string::npos);
}

TEST(ReconcilerGrants, AForeignMemoryConfigMapGetsNoGrantAndIsNamed) {
  Harness h;
  h.exists(owned_by_uid("ConfigMap", "bot-memory", "uid-someone-else"));
  h.reconcile_twice();
  expect_no_grant_made(h);
  EXPECT_FALSE(h.created(kKindLeases)) << "stops at the first object in the way";
  EXPECT_FALSE(h.writes->first(testing::kCallDeleteGrant)) << "no grant of this Agent's was there";
  const std::string status = h.status_written();
  EXPECT_NE(status.find("ObjectInTheWay"), std::string::npos) << status;
  EXPECT_NE(status.find("ConfigMap ns/bot-memory"), std::string::npos) << status;
}

TEST(ReconcilerGrants, AForeignLeaseGetsNoGrantAndIsNamed) {
  Harness h;
  h.exists(owned_by_uid("Lease", "bot-heartbeat", "uid-someone-else"));
  h.reconcile_twice();
  expect_no_grant_made(h);
  EXPECT_TRUE(h.created(kKindConfigMaps));
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
  h.exists(lease);
  h.reconcile_twice();
  expect_no_grant_made(h);
  EXPECT_NE(h.status_written().find("Lease ns/bot-heartbeat"), std::string::npos);
}

// An older operator made the grants before it found the ConfigMap foreign.
TEST(ReconcilerGrants, GrantsLeftForAForeignObjectAreDeletedOnce) {
  Harness h;
  h.exists(owned_by_uid("ConfigMap", "bot-memory", "uid-someone-else"));
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
  expect_no_grant_made(h);
  std::vector<WriteCall> deletes;
  for (const WriteCall& c : h.writes->calls) {
    if (c.call == testing::kCallDeleteGrant) deletes.push_back(c);
  }
  ASSERT_EQ(deletes.size(), 2u);
  EXPECT_EQ(deletes[0].kind + " " + deletes[0].name, "rolebindings bot-runner");
  EXPECT_EQ(deletes[1].kind + " " + deletes[1].name, "roles bot-runner");
  EXPECT_EQ(deletes[1].object["preconditions"]["uid"], "uid-role")
      << "conditional on the Role read";
  EXPECT_NE(h.status_written().find("ConfigMap ns/bot-memory"), std::string::npos);

  // Looked at again a minute later: still in the way, nothing read or
  // deleted about the grants again.
  h.api->requests.clear();
  h.writes->calls.clear();
  h.steady += kObjectInTheWayRecheck + std::chrono::seconds(1);
  ASSERT_TRUE(h.reconciler->reconcile("ns", "bot").ok());
  EXPECT_TRUE(h.created(kKindConfigMaps)) << "the recheck ran";
  EXPECT_FALSE(h.api->first("GET", "/roles/"));
  EXPECT_FALSE(h.writes->first(testing::kCallDeleteGrant));
}

// In all-namespaces mode an Agent in a namespace the operator never manages
// is not reconciled: no read, no write but one Event saying why, and the
// wakeup path does not find it. The control in another namespace writes.
TEST(ReconcilerNamespaces, AnAgentInASystemNamespaceGetsOneEventAndNothingElse) {
  Harness h;
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(h.reconciler->reconcile("kube-system", "bot").ok());
  EXPECT_TRUE(h.api->requests.empty()) << "nothing read";
  ASSERT_EQ(h.written().size(), 1u) << ::testing::PrintToString(h.written());
  const WriteCall& event = h.writes->calls[0];
  EXPECT_EQ(event.call, testing::kCallCreateEvent);
  EXPECT_NE(event.object.dump().find(kReasonNamespaceNotManaged), std::string::npos);
  EXPECT_NE(event.object.dump().find("kube-system"), std::string::npos);
  EXPECT_FALSE(h.reconciler->agent("kube-system", "bot"));
  EXPECT_TRUE(h.reconciler->agent("ns", "bot"));
  ASSERT_TRUE(h.reconciler->reconcile("ns", "bot").ok());
  EXPECT_GT(h.writes->calls.size(), 1u);
}

}  // namespace
}  // namespace hb::controllers
