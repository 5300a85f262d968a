// End to end, as a user meets it: the Helm chart's RBAC, the operator binary,
// Jobs run by kube-controller-manager, Pods run by the local pod executor as
// real heartbeat-runner processes, and the scripted stand-in model over HTTP.
// Each test has its own namespace and its own operator(s) for that namespace.
#include <gtest/gtest.h>

#include <csignal>

#include "controllers/json_util.h"
#include "controllers/schedule/utc_time.h"
#include "tests/e2e/suite/e2e_environment.h"

namespace hb::testing {
namespace {

namespace res = kube::resources;
using controllers::string_at;

// Prices that make a heartbeat's cost visible: a stand-in reply costs cents.
constexpr double kInputCentsPerMillion = 10000;
constexpr double kOutputCentsPerMillion = 30000;
constexpr int kStallTimeoutSeconds = 10;

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
      if (env("HB_KEEP_NAMESPACES").empty()) client_->remove(res::kNamespaces, "", ns_);
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
  json create_agent(const json& manifest) { return client_->create(res::kAgents, ns_, manifest); }
  json agent(const std::string& name) { return client_->get(res::kAgents, ns_, name); }
  json run(const std::string& name) { return client_->get(res::kHeartbeatRuns, ns_, name); }
  std::string phase_of(const std::string& run_name) {
    return string_at(run(run_name), "status/phase");
  }
  bool wait_phase(const std::string& run_name, const std::string& phase,
                  std::chrono::milliseconds timeout) {
    return wait_until([&] { return phase_of(run_name) == phase; }, timeout);
  }
  std::vector<json> runs_of(const std::string& agent_name) {
    std::vector<json> out;
    const json list = client_->list_all(res::kHeartbeatRuns, ns_);  // outlives the loop
    for (const json& r : list["items"]) {
      if (string_at(r, "spec/agentRef/name") == agent_name) out.push_back(r);
    }
    return out;
  }
  size_t jobs() { return client_->list_all(res::kJobs, ns_)["items"].size(); }
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

TEST_F(E2eTest, ScheduledHeartbeatsRunTheRealRunner) {
  const json created = create_agent(
      agent_manifest_e2e("sched", "Check the time.", {{"heartbeat", {{"interval", "30s"}}}}));
  const auto created_at = *controllers::time_at(created, "metadata/creationTimestamp");
  wait_ready(start_operator());
  // The first heartbeat is one interval after creation, not at once.
  ASSERT_TRUE(wait_until([&] { return runs_of("sched").size() == 1; }, 60s));
  const json first = runs_of("sched").front();
  EXPECT_EQ(string_at(first, "spec/scheduledTime"),
            schedule::format_rfc3339(created_at + std::chrono::seconds(30)));
  const std::string name = string_at(first, "metadata/name");
  ASSERT_TRUE(wait_phase(name, "Succeeded", 60s)) << run(name).dump(2);
  const json done = run(name);
  EXPECT_EQ(done["status"]["exitCode"], 0);
  EXPECT_EQ(done["status"]["stopReason"], "completed");
  EXPECT_GT(run_cost(name), 0.0);
  EXPECT_GE(done["status"]["usage"]["toolCalls"].get<int>(), 1);  // the stand-in ran `shell`
  EXPECT_NE(string_at(done, "status/output").find("tand-in"), std::string::npos);  // [Ss]tand-in
  ASSERT_TRUE(wait_until([&] { return spend_cents("sched") == run_cost(name); }, 15s));
  EXPECT_EQ(string_at(agent("sched"), "status/nextHeartbeatTime"),
            schedule::format_rfc3339(created_at + std::chrono::seconds(60)));

  // `kubectl get hbr` is the audit log: the columns a person reads first.
  const std::string table = kubectl("get hbr " + name);
  for (const char* column : {"NAME", "AGENT", "SOURCE", "PHASE", "EXIT", "COST", "DURATION"}) {
    EXPECT_NE(table.find(column), std::string::npos) << column << " missing in\n" << table;
  }
  const std::string row = last_line(table);
  for (const std::string& cell :
       {name, std::string("sched"), std::string("scheduler"), std::string("Succeeded")}) {
    EXPECT_NE(row.find(cell), std::string::npos) << cell << " missing in\n" << table;
  }
  const std::string agents = kubectl("get hba sched");
  EXPECT_NE(agents.find("react_agent"), std::string::npos) << agents;
}

TEST_F(E2eTest, ManualAnnotateAndWakeupTriggers) {
  create_agent(agent_manifest_e2e("trig", "Say hello."));  // no schedule: manual only
  OperatorProcess& op = start_operator();
  wait_ready(op);

  kubectl_create_run("trig", "trig-by-kubectl");
  ASSERT_TRUE(wait_phase("trig-by-kubectl", "Succeeded", 60s)) << run("trig-by-kubectl").dump(2);

  kubectl("annotate agent trig heartbeat.dev/invoke=e2e-annotation");
  ASSERT_TRUE(wait_until(
      [&] {
        for (const json& r : runs_of("trig")) {
          if (string_at(r, "spec/triggerDetail") == "e2e-annotation" &&
              string_at(r, "status/phase") == "Succeeded")
            return true;
        }
        return false;
      },
      60s));

  const std::string path = "/api/v1/namespaces/" + ns_ + "/agents/trig/wakeup";
  EXPECT_EQ(op.post(path, "{}", "not-the-token").status, 401);
  http::Response woke = op.post(path, R"({"reason":"webhook"})", kWakeupToken);
  ASSERT_EQ(woke.status, 201) << woke.body;
  const std::string callback = json::parse(woke.body)["run"].get<std::string>();
  ASSERT_TRUE(wait_phase(callback, "Succeeded", 60s)) << run(callback).dump(2);
  EXPECT_EQ(string_at(run(callback), "spec/invocationSource"), "callback");
  ASSERT_TRUE(wait_until([&] { return runs_of("trig").size() == 3; }, 5s));
  double total = 0;
  for (const json& r : runs_of("trig")) total += r["status"]["usage"]["costCents"].get<double>();
  ASSERT_TRUE(wait_until([&] { return std::abs(spend_cents("trig") - total) < 1e-9; }, 15s))
      << "spend " << spend_cents("trig") << " != sum of run costs " << total;
}

TEST_F(E2eTest, PauseHeartbeatsMovesTheNextSlot) {
  create_agent(
      agent_manifest_e2e("pauser", "Rest a while. [[pause 7]]",
                         {{"type", "memgpt_agent"}, {"heartbeat", {{"interval", "30s"}}}}));
  wait_ready(start_operator());
  kubectl_create_run("pauser", "pauser-1");
  ASSERT_TRUE(wait_phase("pauser-1", "Succeeded", 60s)) << run("pauser-1").dump(2);
  const json done = run("pauser-1");
  EXPECT_EQ(done["status"]["stopReason"], "pause_heartbeats");
  ASSERT_TRUE(
      wait_until([&] { return !string_at(agent("pauser"), "status/pausedUntil").empty(); }, 15s));
  const json a = agent("pauser");
  const auto paused_until = *controllers::time_at(a, "status/pausedUntil");
  const auto finished = *controllers::time_at(done, "status/finishedAt");
  EXPECT_GE(paused_until, finished + std::chrono::minutes(7) - std::chrono::seconds(5));
  EXPECT_LE(paused_until, finished + std::chrono::minutes(7) + std::chrono::seconds(30));
  const auto next = controllers::time_at(a, "status/nextHeartbeatTime");
  ASSERT_TRUE(next.has_value()) << a["status"].dump(2);
  EXPECT_GE(*next, paused_until);
  EXPECT_EQ(string_at(a, "status/phase"), "Paused");
  // No scheduled run while paused (slots at +30 s and +60 s pass).
  std::this_thread::sleep_for(35s);
  EXPECT_EQ(runs_of("pauser").size(), 1u);
}

TEST_F(E2eTest, BudgetExhaustionPausesTheAgent) {
  // Each model reply reports max_tokens of output: 100 tokens at 10,000
  // cents per million = 1 cent, the whole month's budget.
  create_agent(agent_manifest_e2e(
      "spender", "Spend. [[expensive]]",
      {{"heartbeat", {{"interval", "30s"}}},
       {"budget", {{"monthlyCents", 1}}},
       {"model",
        {{"maxTokens", 100},
         {"pricing",
          {{"inputCentsPerMillionTokens", 0}, {"outputCentsPerMillionTokens", 10000}}}}}}));
  wait_ready(start_operator());
  kubectl_create_run("spender", "spender-1");
  ASSERT_TRUE(wait_until(
      [&] {
        const std::string p = phase_of("spender-1");
        return p == "Succeeded" || p == "Failed";
      },
      60s));
  EXPECT_DOUBLE_EQ(run_cost("spender-1"), 1.0) << run("spender-1").dump(2);
  ASSERT_TRUE(wait_until(
      [&] { return string_at(agent("spender"), "status/phase") == "BudgetExceeded"; }, 15s))
      << agent("spender")["status"].dump(2);
  bool exceeded = false;
  const json spender = agent("spender");  // outlives the loop
  for (const json& c : spender["status"]["conditions"]) {
    if (c["type"] == "BudgetExceeded") exceeded = c["status"] == "True";
  }
  EXPECT_TRUE(exceeded);
  const std::string events = kubectl("get events --field-selector reason=BudgetExceeded");
  EXPECT_NE(events.find("spender"), std::string::npos) << events;
  // A manual run waits Queued, and no scheduled run comes.
  kubectl_create_run("spender", "spender-2");
  std::this_thread::sleep_for(35s);
  EXPECT_EQ(phase_of("spender-2"), "Queued");
  EXPECT_NE(string_at(run("spender-2"), "status/message").find("budget"), std::string::npos)
      << run("spender-2")["status"].dump(2);
  EXPECT_EQ(runs_of("spender").size(), 2u);
  EXPECT_DOUBLE_EQ(spend_cents("spender"), 1.0);
}

TEST_F(E2eTest, CancelStopsTheRunner) {
  create_agent(agent_manifest_e2e("canceller", "Work long. [[sleep 120]]",
                                  {{"runtime", {{"graceSeconds", 5}}}}));
  wait_ready(start_operator());
  kubectl_create_run("canceller", "canceller-1");
  ASSERT_TRUE(wait_until([&] { return runner_pid(ns_, "canceller-1") > 0; }, 60s));
  ASSERT_TRUE(wait_phase("canceller-1", "Running", 10s));
  kubectl("patch hbr canceller-1 --type=merge -p '{\"spec\":{\"cancel\":true}}'");
  ASSERT_TRUE(wait_phase("canceller-1", "Cancelled", 60s)) << run("canceller-1").dump(2);
  EXPECT_EQ(string_at(run("canceller-1"), "status/reason"), "Cancelled");
  EXPECT_TRUE(wait_until([&] { return runner_pid(ns_, "canceller-1") < 0; }, 20s))
      << "the runner process outlived its cancelled run";
  EXPECT_TRUE(wait_until([&] { return jobs() == 0; }, 20s));
}

TEST_F(E2eTest, TimeoutEndsTheRun) {
  create_agent(agent_manifest_e2e("slow", "Work long. [[sleep 120]]",
                                  {{"runtime", {{"timeoutSeconds", 8}, {"graceSeconds", 2}}}}));
  wait_ready(start_operator());
  kubectl_create_run("slow", "slow-1");
  ASSERT_TRUE(wait_until(
      [&] {
        const std::string p = phase_of("slow-1");
        return p != "" && p != "Queued" && p != "Running";
      },
      90s));
  const json r = run("slow-1");
  // The runner stops itself a margin short of the Job's deadline and says
  // so; if it could not, the Job's deadline ends it (TimedOut).
  const std::string phase = string_at(r, "status/phase");
  if (phase == "TimedOut") {
    EXPECT_EQ(string_at(r, "status/reason"), "DeadlineExceeded") << r["status"].dump(2);
  } else {
    EXPECT_EQ(string_at(r, "status/stopReason"), "deadline") << r["status"].dump(2);
  }
  EXPECT_TRUE(wait_until([&] { return runner_pid(ns_, "slow-1") < 0; }, 20s));
}

TEST_F(E2eTest, StalledRunnerIsFailedByTheLeaseWatchdog) {
  create_agent(agent_manifest_e2e("staller", "Work long. [[sleep 120]]",
                                  {{"runtime", {{"graceSeconds", 2}}}}));
  wait_ready(start_operator());
  kubectl_create_run("staller", "staller-1");
  pid_t pid = -1;
  ASSERT_TRUE(wait_until([&] { return (pid = runner_pid(ns_, "staller-1")) > 0; }, 60s));
  ASSERT_TRUE(wait_phase("staller-1", "Running", 10s));
  // The runner beats while its shell tool runs; frozen, it cannot.
  auto beats = [&] {
    int renewed = 0;
    const json leases = client_->list_all(res::kLeases, ns_);
    for (const json& l : leases["items"]) renewed += !string_at(l, "spec/renewTime").empty();
    return renewed;
  };
  ASSERT_TRUE(wait_until([&] { return beats() > 0; }, 20s)) << "the runner never beat";
  ASSERT_EQ(::kill(pid, SIGSTOP), 0);
  ASSERT_TRUE(wait_until(
      [&] {
        const std::string p = phase_of("staller-1");
        return p == "Failed" || p == "Succeeded";
      },
      60s));
  ::kill(pid, SIGCONT);  // let the executor's SIGTERM/SIGKILL finish it
  const json r = run("staller-1");
  EXPECT_EQ(string_at(r, "status/phase"), "Failed") << r["status"].dump(2);
  EXPECT_EQ(string_at(r, "status/reason"), "Stalled") << r["status"].dump(2);
  EXPECT_TRUE(wait_until([&] { return jobs() == 0; }, 30s));
}

TEST_F(E2eTest, OperatorKilledMidRunCountsCostOnce) {
  create_agent(agent_manifest_e2e("crashy", "Work a bit. [[sleep 6]]"));
  OperatorProcess& first = start_operator();
  wait_ready(first);
  kubectl_create_run("crashy", "crashy-1");
  ASSERT_TRUE(wait_until([&] { return runner_pid(ns_, "crashy-1") > 0; }, 60s));
  first.kill(SIGKILL);
  // The runner finishes while no operator runs.
  ASSERT_TRUE(wait_until([&] { return runner_pid(ns_, "crashy-1") < 0; }, 60s));
  OperatorProcess& second = start_operator();
  wait_ready(second);
  ASSERT_TRUE(wait_phase("crashy-1", "Succeeded", 60s)) << run("crashy-1").dump(2);
  ASSERT_TRUE(wait_until([&] { return run("crashy-1")["status"]["costRecorded"] == true; }, 15s));
  const double cost = run_cost("crashy-1");
  EXPECT_GT(cost, 0.0);
  EXPECT_DOUBLE_EQ(spend_cents("crashy"), cost);
  // Once more: a restart after counting must not count again.
  second.kill(SIGKILL);
  OperatorProcess& third = start_operator();
  wait_ready(third);
  std::this_thread::sleep_for(5s);
  EXPECT_DOUBLE_EQ(spend_cents("crashy"), cost);
  EXPECT_EQ(runs_of("crashy").size(), 1u);
  EXPECT_EQ(agent("crashy")["status"]["recentRuns"].size(), 1u);
}

TEST_F(E2eTest, TwoReplicasOnlyTheLeaderActs) {
  create_agent(agent_manifest_e2e("ha", "Say hello."));
  OperatorProcess& a = start_operator({"--leader-elect=true"});
  OperatorProcess& b = start_operator({"--leader-elect=true"});
  OperatorProcess* leader = nullptr;
  OperatorProcess* follower = nullptr;
  ASSERT_TRUE(wait_until(
      [&] {
        const double la = a.metric("leader_election_master_status");
        const double lb = b.metric("leader_election_master_status");
        if (la + lb != 1) return false;
        leader = la == 1 ? &a : &b;
        follower = la == 1 ? &b : &a;
        return true;
      },
      60s));
  wait_ready(*leader);
  kubectl_create_run("ha", "ha-1");
  ASSERT_TRUE(wait_phase("ha-1", "Succeeded", 60s)) << run("ha-1").dump(2);
  EXPECT_EQ(follower->metric("heartbeat_api_writes_total"), 0) << "the follower wrote";
  EXPECT_GT(leader->metric("heartbeat_api_writes_total"), 0);

  // The leader dies; the follower takes over within a lease duration.
  leader->kill(SIGKILL);
  ASSERT_TRUE(
      wait_until([&] { return follower->metric("leader_election_master_status") == 1; }, 40s));
  kubectl_create_run("ha", "ha-2");
  ASSERT_TRUE(wait_phase("ha-2", "Succeeded", 60s)) << run("ha-2").dump(2);
  EXPECT_EQ(runs_of("ha").size(), 2u);
}

}  // namespace
}  // namespace hb::testing

// gtest owns the environment; registered before main (gtest_main) runs.
static ::testing::Environment* const kE2eEnvironment =
    ::testing::AddGlobalTestEnvironment(new hb::testing::E2eEnvironment);
