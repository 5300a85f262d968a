// The tenant as the attacker: a namespace editor (tenant_fixture.h) tries to
// make the operator act outside the tenant's namespace. Each test shows the
// harm its attack would do (a positive control) and that it does not happen.
#include <gtest/gtest.h>

#include "api/object_names.h"
#include "controllers/model/json_util.h"
#include "controllers/spend/ledger_record.h"
#include "tests/e2e/suite/tenant_fixture.h"

namespace hb::testing {
namespace {

using controllers::find_path;

const char* kPromptNamePointer =
    "/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/heartbeat/properties/"
    "promptFrom/properties/configMapKeyRef/properties/name/pattern";

// A request line that ends early and a second request after it: sent as a
// path segment unencoded, the second request carries the sender's token.
std::string smuggling_name(const std::string& victim_ns, const std::string& victim_run) {
  return "x HTTP/1.1\r\nHost: a\r\n\r\nDELETE /apis/heartbeat.dev/v1alpha1/namespaces/" +
         victim_ns + "/heartbeatruns/" + victim_run;
}

json run_manifest(const std::string& name, const std::string& agent) {
  return {{"apiVersion", "heartbeat.dev/v1alpha1"},
          {"kind", "HeartbeatRun"},
          {"metadata", {{"name", name}}},
          {"spec", {{"agentRef", {{"name", agent}}}, {"invocationSource", "manual"}}}};
}

class SmugglingTest : public TenantTest {
 public:
  void set_prompt_name_pattern(bool present) {
    const json op = present ? json{{"op", "add"},
                                   {"path", kPromptNamePointer},
                                   {"value", std::string(api::kDns1123SubdomainPattern)}}
                            : json{{"op", "remove"}, {"path", kPromptNamePointer}};
    const std::string file = env_->dir() + "/crd-patch-" + ns_ + ".json";
    {
      std::ofstream out(file);
      out << json::array({op}).dump();
    }
    sh(env_->kubectl() + " patch crd agents.heartbeat.dev --type=json --patch-file " + file);
  }

 protected:
  // What the unencoded name would have put on the wire, sent by hand with
  // the operator's own token (from the chart ServiceAccount's kubeconfig).
  void send_raw_with_operator_token(const std::string& name) {
    const kube::ClusterConfig op =
        kube::load_kubeconfig_file(env_->operator_kubeconfig()).or_throw();
    const std::string host_port = op.server.substr(op.server.find("://") + 3);
    const std::string raw = "GET /api/v1/namespaces/" + ns_ + "/configmaps/" + name +
                            " HTTP/1.1\r\nHost: " + host_port + "\r\nAuthorization: Bearer " +
                            op.token + "\r\nConnection: close\r\n\r\n";
    const std::string file = env_->dir() + "/smuggle-" + ns_ + ".bin";
    {
      std::ofstream out(file, std::ios::binary);
      out << raw;
    }
    sh("timeout 20 openssl s_client -quiet -ign_eof -connect " + host_port + " < " + file +
       " > /dev/null || true");
  }
  bool run_exists(const std::string& ns, const std::string& name) {
    return client_->get(res::kHeartbeatRuns, ns, name).ok();
  }
  json smuggling_agent(const std::string& name) {
    json manifest = agent_manifest_e2e("smuggler", "unused");
    manifest["spec"]["heartbeat"].erase("prompt");
    manifest["spec"]["heartbeat"]["promptFrom"] = {
        {"configMapKeyRef", {{"name", name}, {"key", "prompt.md"}}}};
    return manifest;
  }
};

TEST_F(SmugglingTest, ASmugglingNameNeverReachesTheApiServerWithTheOperatorsToken) {
  const std::string victim = victim_namespace();
  for (const char* name : {"precious", "canary"}) {
    client_->create(res::kHeartbeatRuns, victim, run_manifest(name, "someone")).or_throw();
  }
  const json precious = client_->get(res::kHeartbeatRuns, victim, "precious").or_throw();

  // Positive control: the bytes an unencoded name makes, with the
  // operator's token, delete a run in a namespace the tenant cannot write.
  ASSERT_FALSE(tenant_->remove(res::kHeartbeatRuns, victim, "canary").ok());
  send_raw_with_operator_token(smuggling_name(victim, "canary"));
  ASSERT_TRUE(wait_until([&] { return !run_exists(victim, "canary"); }, 10s))
      << "the raw control did not delete the canary: the test could not see the harm";

  // At apply: the schema refuses the name and names the field.
  kube::Result<json> refused =
      tenant_->create(res::kAgents, ns_, smuggling_agent(smuggling_name(victim, "precious")));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().kind, kube::ErrorKind::kInvalid) << refused.error().message;
  EXPECT_NE(refused.error().message.find("spec.heartbeat.promptFrom.configMapKeyRef.name"),
            std::string::npos)
      << refused.error().message;

  // Stored around the schema (as an Agent from before its pattern would
  // be): the operator refuses it by name and sends nothing with it.
  set_prompt_name_pattern(false);
  struct Restore {
    SmugglingTest* test;
    ~Restore() { test->set_prompt_name_pattern(true); }
  } restore{this};
  ASSERT_TRUE(wait_until(
      [&] {
        return tenant_
            ->create(res::kAgents, ns_, smuggling_agent(smuggling_name(victim, "precious")))
            .ok();
      },
      30s));
  tenant_->create(res::kHeartbeatRuns, ns_, run_manifest("smuggler-1", "smuggler")).or_throw();
  OperatorProcess& op = start_operator();
  wait_ready(op);
  ASSERT_TRUE(wait_until(
      [&] { return spec_valid_of(agent("smuggler")).value("status", "") == "False"; }, 60s))
      << agent("smuggler").dump(2);
  const std::string message = spec_valid_of(agent("smuggler")).value("message", "");
  EXPECT_NE(message.find("spec.heartbeat.promptFrom.configMapKeyRef.name"), std::string::npos)
      << message;
  EXPECT_EQ(message.find_first_of("\r\n"), std::string::npos) << message;
  std::this_thread::sleep_for(3s);  // passes that would have read the prompt
  const json after = client_->get(res::kHeartbeatRuns, victim, "precious").or_throw();
  EXPECT_EQ(after["metadata"]["resourceVersion"], precious["metadata"]["resourceVersion"]);
  EXPECT_EQ(jobs(), 0u);
  // No log line begins with the attacker's second request.
  const std::string log = read_file(op.log_path());
  EXPECT_EQ(log.find("\nDELETE "), std::string::npos);
  EXPECT_EQ(log.find("\nHost: a"), std::string::npos);
}

// The tenant's attack on the money limits: delete and re-apply its Agent,
// then relabel it out of the team's policy. Against the real API server
// with the chart's RBAC: the re-applied Agent (a new object with no status,
// the harm being a spend of 0) shows its month's spend again, the team's
// spend does not move, and the ledger ConfigMap in the release namespace
// is one the tenant can neither read nor delete (the admin can: the control).
TEST_F(TenantTest, DeletingReapplyingOrRelabellingAnAgentLiftsNoLimit) {
  const json manifest = one_cent_agent("spender", "blue");
  create_team_policy("blue-team", "blue", 100);
  tenant_->create(res::kAgents, ns_, manifest).or_throw();
  wait_ready(start_operator());
  kubectl_create_run("spender", "spender-1");
  ASSERT_TRUE(wait_phase("spender-1", "Succeeded", 60s)) << run("spender-1").dump(2);
  ASSERT_TRUE(wait_until([&] { return spend_cents("spender") == 1.0; }, 30s))
      << agent("spender")["status"].dump(2);
  const auto team_spend = [&] {
    const json policy = client_->get(res::kHeartbeatPolicies, ns_, "blue-team").or_throw();
    return controllers::number_at(policy, "status/spend/cents").value_or(-1);
  };
  ASSERT_TRUE(wait_until([&] { return team_spend() == 1.0; }, 20s));

  // Deleted and applied again by its author.
  ASSERT_TRUE(tenant_->remove(res::kAgents, ns_, "spender").ok());
  ASSERT_TRUE(wait_until([&] { return !client_->get(res::kAgents, ns_, "spender").ok(); }, 30s));
  const json again = tenant_->create(res::kAgents, ns_, manifest).or_throw();
  EXPECT_EQ(find_path(again, "status/spend"), nullptr) << "a new object: no spend of its own";
  ASSERT_TRUE(wait_until([&] { return spend_cents("spender") == 1.0; }, 30s))
      << agent("spender")["status"].dump(2);
  EXPECT_EQ(find_path(agent("spender"), "status/spend/period") != nullptr, true);

  // Relabelled out of the team: what it spent stays the team's.
  tenant_
      ->merge_patch(res::kAgents, ns_, "spender", {{"metadata", {{"labels", {{"team", "red"}}}}}})
      .or_throw();
  ASSERT_TRUE(wait_until(
      [&] {
        const json policy = client_->get(res::kHeartbeatPolicies, ns_, "blue-team").or_throw();
        return controllers::int_at(policy, "status/agents") == 0;
      },
      20s));
  EXPECT_EQ(team_spend(), 1.0);

  // The ledger: the admin reads it; the tenant can neither read nor delete it.
  const std::string ledger = controllers::ledger_object_name(ns_, "spender");
  const json record = client_->get(res::kConfigMaps, kReleaseNamespace, ledger).or_throw();
  const controllers::ParsedLedger parsed = controllers::parse_ledger_configmap(record);
  ASSERT_TRUE(parsed.record) << parsed.error;
  int64_t charged = 0;
  for (const auto& [period, spend] : parsed.record->periods) charged += spend.micro_cents;
  EXPECT_EQ(charged, 1'000'000);
  const auto read = tenant_->get(res::kConfigMaps, kReleaseNamespace, ledger);
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.error().code, 403);
  const auto removed = tenant_->remove(res::kConfigMaps, kReleaseNamespace, ledger);
  ASSERT_FALSE(removed.ok());
  EXPECT_EQ(removed.error().code, 403);
}

// The tenant's attack on the team a run was admitted under: while its run
// goes on, it empties the run's heartbeat.dev/policies annotation (RBAC lets
// an editor patch runs: the control that the attack is possible) and
// relabels the Agent out of the team. The run is charged to the team all
// the same, from the stamp on its Job's template, which no one can change;
// an agent the team never admitted adds nothing (the figure follows the
// stamp, not the namespace).
TEST_F(TenantTest, RewritingARunsPolicyStampLiftsNoLimit) {
  create_team_policy("blue-team", "blue", 100);
  json slow = one_cent_agent("escaper", "blue");
  slow["spec"]["heartbeat"]["prompt"] = "Spend slowly. [[sleep 8]] [[expensive]]";
  tenant_->create(res::kAgents, ns_, slow).or_throw();
  tenant_->create(res::kAgents, ns_, one_cent_agent("outsider", "red")).or_throw();
  wait_ready(start_operator());
  kubectl_create_run("escaper", "escaper-1");
  ASSERT_TRUE(wait_until([&] { return jobs() == 1u; }, 60s)) << run("escaper-1").dump(2);
  EXPECT_EQ(controllers::annotation_at(run("escaper-1"), "heartbeat.dev/policies"), "blue-team");

  tenant_
      ->merge_patch(res::kHeartbeatRuns, ns_, "escaper-1",
                    {{"metadata", {{"annotations", {{"heartbeat.dev/policies", ""}}}}}})
      .or_throw();
  tenant_
      ->merge_patch(res::kAgents, ns_, "escaper", {{"metadata", {{"labels", {{"team", "red"}}}}}})
      .or_throw();
  EXPECT_EQ(controllers::annotation_at(run("escaper-1"), "heartbeat.dev/policies"), "");
  ASSERT_TRUE(wait_phase("escaper-1", "Succeeded", 90s)) << run("escaper-1").dump(2);
  kubectl_create_run("outsider", "outsider-1");
  ASSERT_TRUE(wait_phase("outsider-1", "Succeeded", 60s)) << run("outsider-1").dump(2);

  ASSERT_TRUE(wait_until([&] { return spend_cents("escaper") == 1.0; }, 30s))
      << agent("escaper")["status"].dump(2);
  EXPECT_EQ(run("escaper-1")["status"]["policies"], json::array({"blue-team"}));
  const auto team_spend = [&] {
    const json policy = client_->get(res::kHeartbeatPolicies, ns_, "blue-team").or_throw();
    return controllers::number_at(policy, "status/spend/cents").value_or(-1);
  };
  ASSERT_TRUE(wait_until([&] { return team_spend() == 1.0; }, 20s))
      << client_->get(res::kHeartbeatPolicies, ns_, "blue-team").or_throw()["status"].dump(2);
  std::this_thread::sleep_for(2s);  // the outsider's charge, had it gone to the team
  EXPECT_EQ(team_spend(), 1.0);
}

}  // namespace
}  // namespace hb::testing
