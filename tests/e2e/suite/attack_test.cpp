// The agent as an attacker already inside its Pod (docs/security.md): the
// stand-in model asks the shell tool to run the attacks a prompt-injected
// model would, on the real runner, the real tools server and the local pod
// executor's two containers with their own users.
// Each test shows the attack failing with the number it got. The Agents are
// written by the tenant (tenant_fixture.h: a namespace editor), the author
// an agent's prompt comes from.
#include <dirent.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <csignal>
#include <random>

#include "api/heartbeat_pod.h"
#include "api/usage_report.h"
#include "controllers/model/json_util.h"
#include "controllers/model/names.h"
#include "controllers/pod/job_builder.h"
#include "tests/e2e/suite/tenant_fixture.h"

namespace hb::testing {
namespace {

using controllers::find_path;

// A key no file of the source or build tree holds, so any copy of it found
// by the attacker came from this run.
std::string unique_key() {
  std::mt19937_64 rng{std::random_device{}()};
  return "sk-attack-" + std::to_string(rng()) + "-" + std::to_string(rng());
}

// Processes whose command line contains `needle` (the test runs as root).
int processes_with(const std::string& needle) {
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return -1;
  int found = 0;
  while (dirent* e = readdir(proc)) {
    if (std::atoi(e->d_name) <= 0) continue;
    std::string cmdline = read_file("/proc/" + std::string(e->d_name) + "/cmdline");
    std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
    if (cmdline.find(needle) != std::string::npos) ++found;
  }
  closedir(proc);
  return found;
}

class AttackTest : public TenantTest {
 protected:
  // A Secret with a fresh key, and an Agent that uses it, made by the tenant.
  json create_attacker(const std::string& name, const std::string& prompt) {
    tenant_
        ->create(res::kSecrets, ns_,
                 {{"apiVersion", "v1"},
                  {"kind", "Secret"},
                  {"metadata", {{"name", name + "-key"}}},
                  {"stringData", {{"api-key", key_}}}})
        .or_throw();
    json manifest = agent_manifest_e2e(name, prompt);
    manifest["spec"]["model"]["apiKeySecretRef"] = {{"name", name + "-key"}, {"key", "api-key"}};
    return tenant_->create(res::kAgents, ns_, manifest).or_throw();
  }
  // The pattern file the attacks grep with: the key never appears whole in
  // any command line (theirs or ours), only in the file they write.
  std::string key_pattern_command() const {
    const std::size_t half = key_.size() / 2;
    return "printf '%s%s' " + key_.substr(0, half) + " " + key_.substr(half) +
           " > $HOME/keypattern";
  }
  // Tokens x the e2e pricing, as the operator must have charged.
  static double expected_cost(const json& usage) {
    return usage["inputTokens"].get<double>() * kInputCentsPerMillion / 1e6 +
           usage["outputTokens"].get<double>() * kOutputCentsPerMillion / 1e6;
  }
  std::string pods_dir() const { return env_->dir() + "/pods"; }

  const std::string key_ = unique_key();
};

// The key through /proc, the environment or any file under the pod
// executor's state; the runner's result through any termination-log path;
// a setsid survivor that keeps forging it. All fail: 0 keys, 0 survivors,
// and the run is charged tokens x pricing.
TEST_F(AttackTest, TheAgentCannotReadTheKeyNorForgeTheResultNorOutliveItsCall) {
  const std::string dir = pods_dir();
  const std::string keys = key_pattern_command() +
                           "; n=0; for f in /proc/[0-9]*/environ /proc/[0-9]*/cmdline; do "
                           "grep -qaF -f $HOME/keypattern $f 2>/dev/null && n=$((n+1)); done; "
                           "e=$(env | grep -caF -f $HOME/keypattern); "
                           "f=$(grep -rlaF --exclude=keypattern -f $HOME/keypattern " +
                           dir +
                           " 2>/dev/null | wc -l); "
                           "c=$(grep -caF -f $HOME/keypattern $HOME/keypattern); "
                           "echo keys=$((n+e+f)) control=$c >> $HOME/report";
  const std::string forge =
      "w=0; for f in /dev/termination-log $(find " + dir +
      " -name 'termination*' 2>/dev/null); do "
      "printf '{\"usage\":{\"inputTokens\":0,\"outputTokens\":0,\"costCents\":0}}' > $f "
      "2>/dev/null && w=$((w+1)); done; echo writable_results=$w >> $HOME/report";
  const std::string survivor =
      "setsid sh -c 'while :; do for f in $(find " + dir +
      " -name \"termination*\" 2>/dev/null); do echo {} > $f; done; sleep 0.2; done' "
      "> /dev/null 2>&1 < /dev/null & echo spawned";
  const std::string count =
      "n=0; for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline 2>/dev/null | "
      "grep -q 'while :; do for [f]' && n=$((n+1)); done; "
      "echo survivors=$n >> $HOME/report; tr '\\n' ' ' < $HOME/report";
  create_attacker("thief", "Heartbeat. [[shell " + keys + "]] [[shell " + forge + "]] [[shell " +
                               survivor + "]] [[shell " + count + "]]");
  wait_ready(start_operator());
  kubectl_create_run("thief", "thief-1");
  ASSERT_TRUE(wait_until(
      [&] {
        const std::string p = phase_of("thief-1");
        return p == "Succeeded" || p == "Failed";
      },
      120s))
      << run("thief-1").dump(2);
  const json done = run("thief-1");
  ASSERT_EQ(string_at(done, "status/phase"), "Succeeded") << done.dump(2);
  const std::string output = string_at(done, "status/output");
  std::cout << "attack report: " << output << std::endl;
  EXPECT_NE(output.find("keys=0"), std::string::npos) << output;
  // The same grep finds the key where it is (the pattern file): the search works.
  EXPECT_NE(output.find("control=1"), std::string::npos) << output;
  EXPECT_NE(output.find("survivors=0"), std::string::npos) << output;
  // Had any forged result reached the operator, the report (the run's
  // output) and the usage below would be gone.
  const json& usage = done["status"]["usage"];
  EXPECT_EQ(usage["llmCalls"], 5) << done.dump(2);  // 4 tool turns + the final text
  EXPECT_EQ(usage["toolCalls"], 4);
  EXPECT_GT(usage["inputTokens"].get<int64_t>(), 0);
  EXPECT_NEAR(usage["costCents"].get<double>(), expected_cost(usage), 1e-5);
  EXPECT_GT(usage["costCents"].get<double>(), 0.0);
  // The survivor died with its call, and nothing the call started is left.
  EXPECT_EQ(processes_with("while :; do for f in"), 0);
  // The key is in no log the operator or the pod executor wrote.
  EXPECT_EQ(sh("grep -rlaF --exclude=keypattern " + key_ + " " + env_->dir() +
               " 2>/dev/null | wc -l || true"),
            "0\n");
}

// A runner killed (SIGKILL: OOM, node loss) after its second model call
// writes no result; it is still charged both calls, from its Lease beats.
TEST_F(AttackTest, AKilledRunnerIsChargedTheCallsItMade) {
  create_attacker("killed", "Heartbeat. [[shell true]] [[sleep 3301]]");
  wait_ready(start_operator());
  kubectl_create_run("killed", "killed-1");
  // The second call's reply asked for `sleep 3301`: two calls made.
  ASSERT_TRUE(wait_until([&] { return processes_with("sleep 3301") > 0; }, 90s))
      << run("killed-1").dump(2);
  const pid_t runner = runner_pid(ns_, "killed-1");
  ASSERT_GT(runner, 0);
  ASSERT_EQ(::kill(runner, SIGKILL), 0);
  ASSERT_TRUE(wait_until([&] { return phase_of("killed-1") == "Failed"; }, 90s))
      << run("killed-1").dump(2);
  const json done = run("killed-1");
  const json& usage = done["status"]["usage"];
  std::cout << "killed runner charged: " << usage.dump() << std::endl;
  EXPECT_EQ(usage["llmCalls"], 2) << done.dump(2);
  EXPECT_GT(usage["inputTokens"].get<int64_t>(), 0);
  EXPECT_GT(usage["costCents"].get<double>(), 0.0);
  EXPECT_NEAR(usage["costCents"].get<double>(), expected_cost(usage), 1e-5);
  ASSERT_TRUE(wait_until([&] { return spend_cents("killed") > 0; }, 30s));
  EXPECT_NEAR(spend_cents("killed"), usage["costCents"].get<double>(), 1e-5);
  // The tools container went with it: nothing of the call is left running.
  ASSERT_TRUE(wait_until([&] { return processes_with("sleep 3301") == 0; }, 30s));
}

// A peer of the namespace runs a Pod as the agent's runner ServiceAccount
// (Pod creation lets it choose one) and rewrites the Lease's usage report
// lower while the run goes on, then the runner dies without a result. The
// write goes through (the control: RBAC lets the peer lower the Lease, so
// only the operator's kept report stands between it and a lower charge),
// and the run is still charged the two calls the runner reported.
TEST_F(AttackTest, APeerWhoRewritesTheLeaseLowerDoesNotLowerTheCharge) {
  create_attacker("lowered", "Heartbeat. [[shell true]] [[sleep 3303]]");
  wait_ready(start_operator());
  kubectl_create_run("lowered", "lowered-1");
  ASSERT_TRUE(wait_until([&] { return processes_with("sleep 3303") > 0; }, 90s))
      << run("lowered-1").dump(2);
  const std::string lease_name = controllers::lease_name_for_agent("lowered");
  auto reported_calls = [&] {
    const json lease = client_->get(res::kLeases, ns_, lease_name).or_throw();
    const auto decoded =
        api::decode_usage_report(controllers::annotation_at(lease, api::kAnnotationUsage));
    return decoded.report && decoded.report->run == "lowered-1" ? decoded.report->llm_calls : -1;
  };
  ASSERT_TRUE(wait_until([&] { return reported_calls() == 2; }, 30s)) << reported_calls();
  // Stopped, the runner beats no more and writes no result.
  const pid_t runner = runner_pid(ns_, "lowered-1");
  ASSERT_GT(runner, 0);
  ASSERT_EQ(::kill(runner, SIGSTOP), 0);

  auto peer = client_as(controllers::service_account_name("lowered"));
  const json lowered = {
      {"metadata",
       {{"annotations",
         {{api::kAnnotationUsage, api::encode_usage_report({{0, 1, 1, 0, 0}, "lowered-1"})}}}}}};
  ASSERT_TRUE(peer->merge_patch(res::kLeases, ns_, lease_name, lowered).ok());
  EXPECT_EQ(reported_calls(), 0);  // the control: the Lease now says less
  ASSERT_TRUE(wait_until(
      [&] {
        const json lowered_run = run("lowered-1");  // outlives the pointer into it
        const json* kept = find_path(lowered_run, "status/reportedUsage/llmCalls");
        return kept != nullptr && *kept == 2;
      },
      30s))
      << run("lowered-1").dump(2);

  ASSERT_EQ(::kill(runner, SIGKILL), 0);
  ASSERT_TRUE(peer->merge_patch(res::kLeases, ns_, lease_name, lowered).ok());
  ASSERT_TRUE(wait_until([&] { return phase_of("lowered-1") == "Failed"; }, 90s))
      << run("lowered-1").dump(2);
  const json done = run("lowered-1");
  const json& usage = done["status"]["usage"];
  std::cout << "run whose Lease was lowered charged: " << usage.dump() << std::endl;
  EXPECT_EQ(usage["llmCalls"], 2) << done.dump(2);
  EXPECT_GT(usage["inputTokens"].get<int64_t>(), 1);
  EXPECT_NEAR(usage["costCents"].get<double>(), expected_cost(usage), 1e-5);
  ASSERT_TRUE(wait_until([&] { return spend_cents("lowered") > 0; }, 30s));
  EXPECT_NEAR(spend_cents("lowered"), usage["costCents"].get<double>(), 1e-5);
  ASSERT_TRUE(wait_until([&] { return processes_with("sleep 3303") == 0; }, 30s));
}

// Cancelled after one model call: charged that call.
TEST_F(AttackTest, ACancelledRunIsChargedTheCallItMade) {
  create_attacker("stopped", "Heartbeat. [[sleep 3302]]");
  wait_ready(start_operator());
  kubectl_create_run("stopped", "stopped-1");
  ASSERT_TRUE(wait_until([&] { return processes_with("sleep 3302") > 0; }, 90s))
      << run("stopped-1").dump(2);
  client_->merge_patch(res::kHeartbeatRuns, ns_, "stopped-1", {{"spec", {{"cancel", true}}}})
      .or_throw();
  ASSERT_TRUE(wait_phase("stopped-1", "Cancelled", 90s)) << run("stopped-1").dump(2);
  const json stopped = run("stopped-1");
  const json& usage = stopped["status"]["usage"];
  std::cout << "cancelled run charged: " << usage.dump() << std::endl;
  EXPECT_EQ(usage["llmCalls"], 1);
  EXPECT_GT(usage["costCents"].get<double>(), 0.0);
  EXPECT_NEAR(usage["costCents"].get<double>(), expected_cost(usage), 1e-5);
  // SIGTERM to the tools container ended its call too.
  ASSERT_TRUE(wait_until([&] { return processes_with("sleep 3302") == 0; }, 30s));
}

// An Agent named after someone else's ConfigMap gets no write access to it.
TEST_F(AttackTest, AnAgentNamedAfterAForeignConfigMapIsHeldBack) {
  const json foreign = client_
                           ->create(res::kConfigMaps, ns_,
                                    {{"apiVersion", "v1"},
                                     {"kind", "ConfigMap"},
                                     {"metadata", {{"name", "victim-memory"}}},
                                     {"data", {{"blocks.json", "[]"}, {"owner", "someone else"}}}})
                           .or_throw();
  create_attacker("victim", "Heartbeat.");
  wait_ready(start_operator());
  kubectl_create_run("victim", "victim-1");
  auto spec_valid = [&] { return spec_valid_of(agent("victim")); };
  ASSERT_TRUE(wait_until([&] { return spec_valid().value("reason", "") == "ObjectInTheWay"; }, 60s))
      << agent("victim").dump(2);
  EXPECT_EQ(spec_valid()["status"], "False");
  EXPECT_NE(spec_valid()["message"].get<std::string>().find("victim-memory"), std::string::npos);
  const json after = client_->get(res::kConfigMaps, ns_, "victim-memory").or_throw();
  EXPECT_EQ(after["metadata"]["resourceVersion"], foreign["metadata"]["resourceVersion"]);
  EXPECT_FALSE(after["metadata"].contains("ownerReferences"));
  EXPECT_EQ(jobs(), 0u);
  // The run's Queued status is the pass's write after the Agent's status.
  EXPECT_TRUE(wait_phase("victim-1", "Queued", 30s)) << phase_of("victim-1");
  EXPECT_EQ(jobs(), 0u);
}

// The names of the namespace's Roles whose rules name `object` by resourceNames.
std::vector<std::string> roles_naming(kube::Client& client, const std::string& ns,
                                      const std::string& object) {
  std::vector<std::string> out;
  const json roles = client.list_all(res::kRoles, ns).or_throw();
  for (const json& role : roles["items"]) {
    for (const json& rule : role.value("rules", json::array())) {
      const json names = rule.value("resourceNames", json::array());
      if (std::find(names.begin(), names.end(), object) != names.end()) {
        out.push_back(string_at(role, "metadata/name"));
      }
    }
  }
  return out;
}

// Ownership before grants: with a memory ConfigMap or a Lease of an Agent's
// names that someone else made, no ServiceAccount, Role or RoleBinding is
// made for it (a Pod running as that ServiceAccount would write the foreign
// object), and the Agent names the object. The control, an Agent whose
// objects are its own in the same namespace, gets its Role: the test sees a
// Role when there is one.
TEST_F(AttackTest, NoGrantNamesAForeignMemoryConfigMapOrLease) {
  client_
      ->create(res::kConfigMaps, ns_,
               {{"apiVersion", "v1"},
                {"kind", "ConfigMap"},
                {"metadata", {{"name", "cmvictim-memory"}}},
                {"data", {{"owner", "someone else"}}}})
      .or_throw();
  client_
      ->create(res::kLeases, ns_,
               {{"apiVersion", "coordination.k8s.io/v1"},
                {"kind", "Lease"},
                {"metadata", {{"name", "leasevictim-heartbeat"}}},
                {"spec", {{"holderIdentity", "someone else"}}}})
      .or_throw();
  create_attacker("cmvictim", "Heartbeat.");
  create_attacker("leasevictim", "Heartbeat.");
  create_attacker("control", "Heartbeat.");
  wait_ready(start_operator());
  kubectl_create_run("cmvictim", "cmvictim-1");
  kubectl_create_run("leasevictim", "leasevictim-1");
  const std::pair<const char*, const char*> held[] = {{"cmvictim", "ConfigMap "},
                                                      {"leasevictim", "Lease "}};
  for (const auto& [name, kind] : held) {
    const std::string object = std::string(kind) + ns_ + "/" + name +
                               (std::string(kind) == "Lease " ? "-heartbeat" : "-memory");
    ASSERT_TRUE(wait_until(
        [&] { return spec_valid_of(agent(name)).value("reason", "") == "ObjectInTheWay"; }, 60s))
        << agent(name).dump(2);
    EXPECT_NE(spec_valid_of(agent(name))["message"].get<std::string>().find(object),
              std::string::npos)
        << spec_valid_of(agent(name)).dump();
  }
  // The control's Role exists by now (its objects are made when it appears).
  ASSERT_TRUE(
      wait_until([&] { return !roles_naming(*client_, ns_, "control-memory").empty(); }, 30s));
  EXPECT_EQ(roles_naming(*client_, ns_, "control-heartbeat"),
            std::vector<std::string>{"control-runner"});
  for (const char* object :
       {"cmvictim-memory", "cmvictim-heartbeat", "leasevictim-memory", "leasevictim-heartbeat"}) {
    EXPECT_EQ(roles_naming(*client_, ns_, object), std::vector<std::string>{}) << object;
  }
  for (const char* name : {"cmvictim-runner", "leasevictim-runner"}) {
    EXPECT_TRUE(client_->get(res::kRoleBindings, ns_, name).is(kube::ErrorKind::kNotFound)) << name;
    EXPECT_TRUE(client_->get(res::kServiceAccounts, ns_, name).is(kube::ErrorKind::kNotFound))
        << name;
  }
  EXPECT_TRUE(client_->get(res::kRoleBindings, ns_, "control-runner").ok());
  EXPECT_EQ(jobs(), 0u);
  const json lease = client_->get(res::kLeases, ns_, "leasevictim-heartbeat").or_throw();
  EXPECT_EQ(string_at(lease, "spec/holderIdentity"), "someone else");
}

// A Role and RoleBinding an older operator made before it found the
// ConfigMap foreign (its order: ServiceAccount, Role, RoleBinding, then the
// memory ConfigMap) are deleted; the Agent names the object and starts
// no run. The Role is there before the operator starts: the test would see
// it left.
TEST_F(AttackTest, AGrantLeftForAForeignConfigMapIsRemoved) {
  client_
      ->create(res::kConfigMaps, ns_,
               {{"apiVersion", "v1"},
                {"kind", "ConfigMap"},
                {"metadata", {{"name", "legacy-memory"}}},
                {"data", {{"owner", "someone else"}}}})
      .or_throw();
  const json legacy = create_attacker("legacy", "Heartbeat.");
  for (const auto& [kind, object] :
       controllers::build_agent_objects(controllers::parse_agent_spec(legacy).spec, {})) {
    if (kind == "serviceaccounts") client_->create(res::kServiceAccounts, ns_, object).or_throw();
    if (kind == "roles") client_->create(res::kRoles, ns_, object).or_throw();
    if (kind == "rolebindings") client_->create(res::kRoleBindings, ns_, object).or_throw();
  }
  ASSERT_EQ(roles_naming(*client_, ns_, "legacy-memory"),
            std::vector<std::string>{"legacy-runner"});
  wait_ready(start_operator());
  kubectl_create_run("legacy", "legacy-1");
  ASSERT_TRUE(wait_until(
      [&] {
        return client_->get(res::kRoles, ns_, "legacy-runner").is(kube::ErrorKind::kNotFound) &&
               client_->get(res::kRoleBindings, ns_, "legacy-runner")
                   .is(kube::ErrorKind::kNotFound);
      },
      60s))
      << "the grant is still there";
  EXPECT_EQ(roles_naming(*client_, ns_, "legacy-memory"), std::vector<std::string>{});
  ASSERT_TRUE(wait_until(
      [&] { return spec_valid_of(agent("legacy")).value("reason", "") == "ObjectInTheWay"; }, 60s))
      << agent("legacy").dump(2);
  EXPECT_NE(spec_valid_of(agent("legacy"))["message"].get<std::string>().find("legacy-memory"),
            std::string::npos);
  EXPECT_TRUE(wait_phase("legacy-1", "Queued", 30s)) << phase_of("legacy-1");
  EXPECT_EQ(jobs(), 0u);
}

}  // namespace
}  // namespace hb::testing
