// The e2e suite's test fixture: a namespace per test, operators for it that
// act as the chart's ServiceAccount, and helpers to create Agents and read
// runs the way a user would.
#pragma once

#include <gtest/gtest.h>

#include <csignal>

#include "controllers/model/json_util.h"
#include "tests/e2e/suite/e2e_environment.h"

namespace hb::testing {

namespace res = kube::resources;
using controllers::string_at;

// Prices that make a heartbeat's cost visible: a stand-in reply costs cents.
inline constexpr double kInputCentsPerMillion = 10000;
inline constexpr double kOutputCentsPerMillion = 30000;
inline constexpr int kStallTimeoutSeconds = 10;

class E2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    env_ = E2eEnvironment::instance;
    ASSERT_NE(env_, nullptr);
    ASSERT_TRUE(env_->helpers_alive()) << "the fake model or the local pod executor died";
    client_ = ClusterFixture::client();
    std::string prefix;
    for (char c : std::string(::testing::UnitTest::GetInstance()->current_test_info()->name())) {
      if (prefix.size() < 20)
        prefix += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    ns_ = ClusterFixture::make_namespace("e2e-" + prefix);
  }

  void TearDown() override {
    for (auto& op : operators_) {
      if (HasFailure()) {
        std::cout << "operator log " << op->log_path() << " ends with:\n"
                  << tail_of_file(op->log_path()) << std::endl;
      }
      op->kill(SIGKILL);
    }
    try {
      if (env("HB_KEEP_NAMESPACES").empty()) client_->remove(res::kNamespaces, "", ns_).or_throw();
    } catch (const std::exception&) {
    }
  }

  // An operator for this test's namespace, acting as the chart's
  // ServiceAccount, with the chart's leader Lease and wakeup Secret.
  OperatorProcess& start_operator(std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {
        "--kubeconfig=" + env_->operator_kubeconfig(),
        "--namespace=" + ns_,
        std::string("--leader-election-namespace=") + kReleaseNamespace,
        std::string("--leader-election-id=") + kLeaderLease,
        std::string("--wakeup-token-secret=") + kWakeupSecret,
        "--stall-timeout=" + std::to_string(kStallTimeoutSeconds),
        std::string("--runner-image=") + kRunnerImage,
        "--log-level=debug"};
    bool leader_flag = false;
    for (const auto& e : extra) leader_flag = leader_flag || e.rfind("--leader-elect=", 0) == 0;
    if (!leader_flag) args.push_back("--leader-elect=false");
    args.insert(args.end(), extra.begin(), extra.end());
    const std::string log =
        env_->dir() + "/operator-" + ns_ + "-" + std::to_string(operators_.size()) + ".log";
    operators_.push_back(std::make_unique<OperatorProcess>(args, log));
    OperatorProcess& op = *operators_.back();
    op.start();
    return op;
  }
  void wait_ready(OperatorProcess& op) {
    const bool ready = wait_until(
        [&] {
          if (!op.alive()) throw std::runtime_error("operator exited");
          return op.ready();
        },
        60s);
    ASSERT_TRUE(ready) << "operator not ready (exit status " << op.exit_status() << "); log:\n"
                       << tail_of_file(op.log_path());
  }

  json agent_manifest_e2e(const std::string& name, const std::string& prompt,
                          const json& extra = json::object()) {
    json heartbeat = {{"prompt", prompt}};
    json a = agent_manifest(name, heartbeat);
    a["spec"]["model"]["baseURL"] = env_->model_base_url();
    a["spec"]["model"]["pricing"] = {{"inputCentsPerMillionTokens", kInputCentsPerMillion},
                                     {"outputCentsPerMillionTokens", kOutputCentsPerMillion}};
    a["spec"].merge_patch(extra);
    return a;
  }
  // An Agent of `team` whose every run costs 1 cent: its first reply is
  // priced 1 cent and spec.budget.perRunCents stops the run there.
  json one_cent_agent(const std::string& name, const std::string& team) {
    const json one_cent_a_run = {
        {"maxTokens", 100},
        {"pricing", {{"inputCentsPerMillionTokens", 0}, {"outputCentsPerMillionTokens", 10000}}}};
    json manifest =
        agent_manifest_e2e(name, "Spend. [[expensive]]",
                           {{"model", one_cent_a_run}, {"budget", {{"perRunCents", 1}}}});
    manifest["metadata"]["labels"] = {{"team", team}};
    return manifest;
  }
  // A HeartbeatPolicy over the Agents labelled team=`team`, with a team budget.
  void create_team_policy(const std::string& name, const std::string& team, int64_t cents) {
    client_
        ->create(res::kHeartbeatPolicies, ns_,
                 {{"apiVersion", "heartbeat.dev/v1alpha1"},
                  {"kind", "HeartbeatPolicy"},
                  {"metadata", {{"name", name}}},
                  {"spec",
                   {{"selector", {{"matchLabels", {{"team", team}}}}},
                    {"budget", {{"monthlyCents", cents}}}}}})
        .or_throw();
  }
  json create_agent(const json& manifest) {
    return client_->create(res::kAgents, ns_, manifest).or_throw();
  }
  json agent(const std::string& name) { return client_->get(res::kAgents, ns_, name).or_throw(); }
  json run(const std::string& name) {
    return client_->get(res::kHeartbeatRuns, ns_, name).or_throw();
  }
  std::string phase_of(const std::string& run_name) {
    return string_at(run(run_name), "status/phase");
  }
  bool wait_phase(const std::string& run_name, const std::string& phase,
                  std::chrono::milliseconds timeout) {
    return wait_until([&] { return phase_of(run_name) == phase; }, timeout);
  }
  // Every run of the namespace, from one list: one resourceVersion, so a
  // consistent snapshot (reads one after another are not).
  std::vector<json> runs() {
    const json list = client_->list_all(res::kHeartbeatRuns, ns_).or_throw();
    return list["items"].get<std::vector<json>>();
  }
  std::vector<json> runs_of(const std::string& agent_name) {
    std::vector<json> out;
    for (json& r : runs()) {
      if (string_at(r, "spec/agentRef/name") == agent_name) out.push_back(std::move(r));
    }
    return out;
  }
  size_t jobs() { return client_->list_all(res::kJobs, ns_).or_throw()["items"].size(); }
  std::string kubectl(const std::string& args) {
    return sh(env_->kubectl() + " -n " + ns_ + " " + args);
  }
  // A manual run, created the way a user does it.
  void kubectl_create_run(const std::string& agent_name, const std::string& run_name) {
    sh("printf '%s\\n' 'apiVersion: heartbeat.dev/v1alpha1' 'kind: HeartbeatRun' "
       "'metadata:' '  name: " +
       run_name + "' 'spec:' '  agentRef:' '    name: " + agent_name +
       "' '  invocationSource: manual' | " + env_->kubectl() + " -n " + ns_ + " create -f -");
  }
  double spend_cents(const std::string& agent_name) {
    const json a = agent(agent_name);
    const json* cents = controllers::find_path(a, "status/spend/cents");
    return cents == nullptr ? 0.0 : cents->get<double>();
  }
  double run_cost(const std::string& run_name) {
    const json r = run(run_name);
    const json* cents = controllers::find_path(r, "status/usage/costCents");
    return cents == nullptr ? 0.0 : cents->get<double>();
  }

  E2eEnvironment* env_ = nullptr;
  std::shared_ptr<kube::Client> client_;
  std::string ns_;
  std::vector<std::unique_ptr<OperatorProcess>> operators_;
};

}  // namespace hb::testing
