// The operator against a real API server, kube-controller-manager (Job and
// garbage-collector controllers) and a fake kubelet.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <set>

#include "api/exit_codes.h"
#include "controllers/model/json_util.h"
#include "controllers/model/mentions.h"
#include "controllers/model/names.h"
#include "controllers/pod/job_builder.h"
#include "controllers/policy/concurrency.h"
#include "controllers/schedule/run_name.h"
#include "controllers/schedule/slots.h"
#include "controllers/schedule/stable_hash.h"
#include "controllers/schedule/utc_time.h"
#include "tests/integration/operator/harness.h"
#include "tests/support/kstatus.h"
#include "tests/support/raw_client.h"
#include "tests/support/tcp_proxy.h"

namespace hb::testing {
namespace {

namespace res = kube::resources;
using controllers::string_at;

struct WritesPerHeartbeat;

class OperatorTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { ClusterFixture::install_crds(); }

  void SetUp() override {
    client_ = ClusterFixture::client();
    const std::string test = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::string prefix;
    for (char c : test) {
      if (prefix.size() < 20)
        prefix += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    ns_ = ClusterFixture::make_namespace("it-" + prefix);
  }
  void TearDown() override {
    if (HasFailure() && operator_) {
      std::cout << "operator log " << operator_->log_path() << " ends with:\n"
                << tail_of_file(operator_->log_path()) << std::endl;
    }
    if (kubelet_) kubelet_->stop();
    if (operator_) operator_->kill(SIGKILL);
    try {
      if (env("HB_KEEP_NAMESPACES").empty()) client_->remove(res::kNamespaces, "", ns_).or_throw();
    } catch (const std::exception&) {
    }
  }

  std::vector<std::string> operator_args(const std::vector<std::string>& extra = {}) const {
    std::vector<std::string> args = {
        "--namespace=" + ns_,      "--leader-election-namespace=" + ns_,
        "--leader-election-id=op", "--wakeup-token-secret=llm",
        "--stall-timeout=10",      "--runner-image=runner:test",
        "--log-level=debug"};
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  }

  // A HeartbeatPolicy of ns_ with this spec.
  void create_policy(const std::string& name, const json& spec) {
    client_
        ->create(res::kHeartbeatPolicies, ns_,
                 {{"apiVersion", "heartbeat.dev/v1alpha1"},
                  {"kind", "HeartbeatPolicy"},
                  {"metadata", {{"name", name}}},
                  {"spec", spec}})
        .or_throw();
  }

  // API writes per manual heartbeat of `agent` (below).
  WritesPerHeartbeat measure_writes(const std::string& agent, int runs);

  // A second replica with the same flags (plus `extra`), ready: a standby
  // while the first leads.
  std::unique_ptr<OperatorProcess> start_second_operator(
      const std::vector<std::string>& extra = {}) {
    auto second =
        std::make_unique<OperatorProcess>(operator_args(extra), operator_->log_path() + ".second");
    second->start();
    if (!wait_until([&] { return second->ready(); }, 30s)) {
      throw std::runtime_error("the second operator did not become ready");
    }
    return second;
  }

  std::string lease_holder() {
    return string_at(client_->get(res::kLeases, ns_, "op").or_throw(), "spec/holderIdentity");
  }

  // Creates an Agent invoked by annotation; true once its one run succeeded.
  bool invoke_new_agent_until_succeeded(const std::string& name, const std::string& value,
                                        std::chrono::seconds timeout) {
    json manifest = agent_manifest(name, {{"prompt", "Heartbeat."}});
    manifest["metadata"]["annotations"] = {{"heartbeat.dev/invoke", value}};
    create_agent(manifest);
    return wait_until(
        [&] {
          const auto runs = runs_of(name);
          return runs.size() == 1 && string_at(runs[0], "status/phase") == "Succeeded";
        },
        timeout);
  }

  void start_operator(std::vector<std::string> extra = {}) {
    const std::vector<std::string> args = operator_args(extra);
    const std::string log =
        env("HB_OPERATOR_LOG", env("HB_BUILD_DIR", ".") + "/Testing/operator-" + ns_ + ".log");
    operator_ = std::make_unique<OperatorProcess>(args, log);
    const bool ready = operator_->start_until_ready(60s);
    ASSERT_TRUE(ready) << "operator not ready within 60 s (exit status " << operator_->exit_status()
                       << "); log " << log << " ends with:\n"
                       << tail_of_file(log);
  }
  void start_kubelet(FakeKubelet::Script script) {
    kubelet_ = std::make_unique<FakeKubelet>(client_, ns_, std::move(script));
    kubelet_->start();
  }
  json create_agent(const json& manifest) {
    return client_->create(res::kAgents, ns_, manifest).or_throw();
  }
  json agent(const std::string& name) { return client_->get(res::kAgents, ns_, name).or_throw(); }
  json run(const std::string& name) {
    return client_->get(res::kHeartbeatRuns, ns_, name).or_throw();
  }
  std::vector<json> runs_of(const std::string& agent_name) {
    std::vector<json> out;
    const json list = client_->list_all(res::kHeartbeatRuns, ns_).or_throw();
    for (const json& r : list["items"]) {
      if (string_at(r, "spec/agentRef/name") == agent_name) out.push_back(r);
    }
    return out;
  }
  size_t jobs() { return client_->list_all(res::kJobs, ns_).or_throw()["items"].size(); }
  bool run_phase(const std::string& name, const std::string& phase) {
    return string_at(run(name), "status/phase") == phase;
  }
  const json* condition_of(const json& object, const std::string& type) {
    const json* conditions = controllers::find_path(object, "status/conditions");
    if (conditions == nullptr) return nullptr;
    for (const json& c : *conditions) {
      if (c["type"] == type) return &c;
    }
    return nullptr;
  }
  bool condition(const json& object, const std::string& type, const std::string& status) {
    const json* c = condition_of(object, type);
    return c != nullptr && (*c)["status"] == status;
  }
  std::string condition_reason(const json& object, const std::string& type) {
    const json* c = condition_of(object, type);
    return c != nullptr ? string_at(*c, "reason") : std::string();
  }
  struct HealthCase {
    std::string kind, name;
    json object;
    std::string want;
  };
  // Runs the chart's Argo CD health scripts (tests/unit/argocd) on objects
  // read from the control plane; the exit status (0: all as wanted).
  int argocd_health(const std::vector<HealthCase>& cases) {
    json list = json::array();
    for (const HealthCase& c : cases) {
      list.push_back({{"kind", c.kind}, {"name", c.name}, {"object", c.object}, {"want", c.want}});
    }
    const std::string file = env("HB_BUILD_DIR", ".") + "/Testing/argocd-" + ns_ + ".json";
    std::ofstream(file) << list.dump();
    const std::string command =
        "bash " HB_SOURCE_DIR "/tests/unit/argocd/health_test.sh '" + file + "'";
    return std::system(command.c_str());
  }
  // `each_poll`: called at every poll of the runs while they go on.
  void five_agents_two_at_a_time(const std::vector<std::string>& operator_flags,
                                 const std::string& limit,
                                 const std::function<void()>& each_poll = {});
  size_t events_with_reason(const std::string& reason) {
    size_t n = 0;
    const json list = client_->list_all(res::kEvents, ns_).or_throw();
    for (const json& e : list["items"]) n += e["reason"] == reason;
    return n;
  }

  std::shared_ptr<kube::Client> client_;
  std::string ns_;
  std::unique_ptr<OperatorProcess> operator_;
  std::unique_ptr<FakeKubelet> kubelet_;
};

PodScript finishes_with(double cost, std::optional<int> pause = std::nullopt, int exit_code = 0) {
  PodScript s;
  s.run_for = 500ms;
  s.exit_code = exit_code;
  s.termination_message = FakeKubelet::result(cost, pause);
  return s;
}

// A run that ends with this final answer (and, when given, this many tool
// calls that could change something).
PodScript finishes_saying(const std::string& output,
                          std::optional<int64_t> action_tool_calls = std::nullopt) {
  PodScript s = finishes_with(0.1);
  json result = json::parse(s.termination_message);
  result["output"] = output;
  if (action_tool_calls) result["usage"]["actionToolCalls"] = *action_tool_calls;
  s.termination_message = result.dump();
  return s;
}

TEST_F(OperatorTest, FirstRunAfterOneIntervalAndNoDuplicateForAnExistingSlotRun) {
  start_kubelet([](const json&) { return finishes_with(0.5); });
  json a = create_agent(agent_manifest("alpha", {{"prompt", "Heartbeat."}, {"interval", "30s"}}));
  json b = create_agent(agent_manifest("beta", {{"prompt", "Heartbeat."}, {"interval", "30s"}}));
  const auto created_a = *controllers::time_at(a, "metadata/creationTimestamp");
  const auto created_b = *controllers::time_at(b, "metadata/creationTimestamp");
  // Beta's first slot run already exists, as if an operator had created it
  // and been killed before creating its Job.
  const auto slot_b = created_b + 30s;
  json pre = manual_run("beta", schedule::scheduled_run_name("beta", slot_b));
  pre["spec"]["invocationSource"] = "scheduler";
  pre["spec"]["scheduledTime"] = schedule::format_rfc3339(slot_b);
  pre["metadata"]["ownerReferences"] = json::array({{{"apiVersion", "heartbeat.dev/v1alpha1"},
                                                     {"kind", "Agent"},
                                                     {"name", "beta"},
                                                     {"uid", string_at(b, "metadata/uid")},
                                                     {"controller", true}}});
  client_->create(res::kHeartbeatRuns, ns_, pre).or_throw();
  start_operator();
  // Nothing at once: the first heartbeat is one interval after creation.
  std::this_thread::sleep_for(5s);
  EXPECT_TRUE(runs_of("alpha").empty());
  EXPECT_EQ(string_at(agent("alpha"), "status/nextHeartbeatTime"),
            schedule::format_rfc3339(created_a + 30s));
  ASSERT_TRUE(wait_until([&] { return runs_of("alpha").size() == 1; }, 40s));
  const json first = runs_of("alpha")[0];
  EXPECT_EQ(string_at(first, "spec/scheduledTime"), schedule::format_rfc3339(created_a + 30s));
  EXPECT_GE(*controllers::time_at(first, "metadata/creationTimestamp"), created_a + 29s);
  const std::string name = string_at(first, "metadata/name");
  ASSERT_TRUE(wait_until([&] { return run_phase(name, "Succeeded"); }, 20s));
  ASSERT_TRUE(
      wait_until([&] { return run_phase(string_at(pre, "metadata/name"), "Succeeded"); }, 20s));
  EXPECT_EQ(runs_of("beta").size(), 1u);  // adopted, not duplicated
  json done = run(name);
  EXPECT_EQ(done["status"]["costRecorded"], true);
  // No phase label on a succeeded run: the label finds runs to look at.
  EXPECT_FALSE(done["metadata"]["labels"].contains("heartbeat.dev/phase"));
  EXPECT_EQ(done["status"]["exitCode"], 0);
  ASSERT_TRUE(wait_until([&] { return agent("alpha")["status"]["spend"]["cents"] == 0.5; }, 10s));
  json ag = agent("alpha");
  EXPECT_EQ(ag["status"]["recentRuns"][0]["name"], name);
  EXPECT_TRUE(ag["status"].contains("lastHeartbeatTime"));
  EXPECT_EQ(ag["status"]["nextHeartbeatTime"], schedule::format_rfc3339(created_a + 60s));
  EXPECT_TRUE(condition(ag, "Ready", "True"));
  EXPECT_EQ(jobs(), 2u);
  // One schedule-lag sample per Job this operator created for a scheduler run.
  EXPECT_EQ(operator_->metric("heartbeat_schedule_lag_seconds_count"), 2);
}

// One write between a due slot and its Job: the Job is made first, carrying
// the run, which is made right after and takes the Job as its own. Then
// the garbage collector treats the Job as the run's: deleting the run
// deletes it. The runner's trace is the one the run names.
TEST_F(OperatorTest, ASlotsJobComesFirstAndItsRunTakesItOver) {
  start_kubelet([](const json&) { return finishes_with(0.2); });
  create_agent(agent_manifest("gamma", {{"prompt", "Heartbeat."}, {"interval", "30s"}}));
  start_operator();
  ASSERT_TRUE(wait_until([&] { return runs_of("gamma").size() == 1; }, 45s));
  const std::string name = string_at(runs_of("gamma")[0], "metadata/name");
  ASSERT_TRUE(wait_until([&] { return run(name)["status"]["costRecorded"] == true; }, 30s));
  const json stored = run(name);
  const std::string job_name = controllers::job_name_for_run(name);
  json job;
  ASSERT_TRUE(wait_until(
      [&] {
        job = client_->get(res::kJobs, ns_, job_name).or_throw();
        return controllers::find_path(job, "metadata/ownerReferences") != nullptr;
      },
      20s));
  const json& owners = job["metadata"]["ownerReferences"];
  ASSERT_EQ(owners.size(), 1u);
  EXPECT_EQ(owners[0]["kind"], "HeartbeatRun");
  EXPECT_EQ(owners[0]["uid"], stored["metadata"]["uid"]);
  EXPECT_EQ(owners[0]["controller"], true);
  EXPECT_FALSE(job["metadata"]["annotations"].contains("heartbeat.dev/run-to-make"));
  const std::string trace(controllers::annotation_at(stored, "heartbeat.dev/trace-id"));
  ASSERT_EQ(trace.size(), 32u);
  EXPECT_NE(job["spec"]["template"].dump().find(trace), std::string::npos)
      << "the runner's TRACEPARENT carries the run's trace id";
  EXPECT_GE(operator_->metric("heartbeat_api_writes_total{kind=\"job_handover\"}"), 1);
  client_->remove(res::kHeartbeatRuns, ns_, name).or_throw();
  EXPECT_TRUE(wait_until(
      [&] { return client_->get(res::kJobs, ns_, job_name).is(kube::ErrorKind::kNotFound); }, 30s))
      << "the run's Job goes with it";
}

TEST_F(OperatorTest, CostCountedOnceAcrossKillDashNineAndRestart) {
  std::atomic<bool> release{false};
  start_kubelet([&](const json&) {
    PodScript s = finishes_with(3.0);
    s.run_for = 4s;
    return s;
  });
  create_agent(agent_manifest("gamma", {{"prompt", "Heartbeat."}}));
  start_operator();
  const double writes_before = operator_->metric("heartbeat_api_writes_total");
  client_->create(res::kHeartbeatRuns, ns_, manual_run("gamma", "gamma-1")).or_throw();
  ASSERT_TRUE(wait_until([&] { return run_phase("gamma-1", "Running"); }, 20s));
  const double writes_started = operator_->metric("heartbeat_api_writes_total");
  // Kill -9 while the run is running; it finishes while the operator is down.
  operator_->kill(SIGKILL);
  std::this_thread::sleep_for(5s);
  // Restart and kill again quickly a few times around the accounting.
  for (int i = 0; i < 3; ++i) {
    start_operator();
    std::this_thread::sleep_for(std::chrono::milliseconds(150 * i));
    operator_->kill(SIGKILL);
  }
  start_operator();
  ASSERT_TRUE(wait_until([&] { return run("gamma-1")["status"]["costRecorded"] == true; }, 30s));
  EXPECT_EQ(agent("gamma")["status"]["spend"]["cents"], 3.0);
  operator_->kill(SIGKILL);
  start_operator();
  std::this_thread::sleep_for(3s);
  json g = agent("gamma");
  EXPECT_EQ(g["status"]["spend"]["cents"], 3.0);
  EXPECT_EQ(g["status"]["spend"]["inputTokens"], 1200);
  EXPECT_EQ(g["status"]["recentRuns"].size(), 1u);
  std::cout << "[ writes ] manual run until Running: " << writes_started - writes_before
            << " (first run of the agent includes 5 per-agent objects)" << std::endl;
}

// API writes per manual heartbeat, averaged over `runs` after a first one
// (which makes the per-agent objects), by request class.
// A policy's status writes (its own thread, at most one every 5 s, only when
// it changed) are per policy, not per heartbeat: counted apart.
struct WritesPerHeartbeat {
  double writes = 0, requests = 0, dispatch = 0, lifecycle = 0, bookkeeping = 0, policy_status = 0;
};

WritesPerHeartbeat OperatorTest::measure_writes(const std::string& agent, int runs) {
  client_->create(res::kHeartbeatRuns, ns_, manual_run(agent, agent + "-0")).or_throw();
  EXPECT_TRUE(wait_until([&] { return run(agent + "-0")["status"]["costRecorded"] == true; }, 30s));
  std::this_thread::sleep_for(1s);
  auto by_class = [&](const char* cls) {
    return operator_->metric(std::string("heartbeat_api_writes_by_class_total{class=\"") + cls +
                             "\"}");
  };
  auto now = [&] {
    const double policy_status =
        operator_->metric("heartbeat_api_writes_total{kind=\"policy_status\"}");
    return WritesPerHeartbeat{operator_->metric("heartbeat_api_writes_total") - policy_status,
                              operator_->metric("rest_client_requests_total"),
                              by_class("dispatch"),
                              by_class("lifecycle"),
                              by_class("bookkeeping"),
                              policy_status};
  };
  const WritesPerHeartbeat before = now();
  for (int i = 1; i <= runs; ++i) {
    const std::string name = agent + "-" + std::to_string(i);
    client_->create(res::kHeartbeatRuns, ns_, manual_run(agent, name)).or_throw();
    EXPECT_TRUE(wait_until([&] { return run(name)["status"]["costRecorded"] == true; }, 30s));
  }
  std::this_thread::sleep_for(1s);
  const WritesPerHeartbeat after = now();
  const double n = runs;
  return {(after.writes - before.writes) / n,           (after.requests - before.requests) / n,
          (after.dispatch - before.dispatch) / n,       (after.lifecycle - before.lifecycle) / n,
          (after.bookkeeping - before.bookkeeping) / n, after.policy_status - before.policy_status};
}

void print_writes(const char* what, const WritesPerHeartbeat& w) {
  std::cout << "[ writes ] per manual heartbeat" << what << ": " << w.writes << " writes, "
            << w.requests << " requests (incl. watches); by class: dispatch " << w.dispatch
            << ", lifecycle " << w.lifecycle << ", bookkeeping " << w.bookkeeping
            << "; policy status writes in the window: " << w.policy_status << std::endl;
}

TEST_F(OperatorTest, WritesPerHeartbeatSteadyState) {
  start_kubelet([](const json&) { return finishes_with(0.1); });
  create_agent(agent_manifest("delta", {{"prompt", "Heartbeat."}}));
  // A window no run here outlasts, so the count does not depend on machine speed.
  start_operator({"--status-coalesce-seconds=60"});
  const WritesPerHeartbeat w = measure_writes("delta", 3);
  print_writes("", w);
  // The critical path is two writes: the run's adoption (the scheduler's
  // run create) and its Job; the rest queues behind other dispatches.
  EXPECT_EQ(w.dispatch, 2);
  EXPECT_EQ(w.dispatch + w.lifecycle + w.bookkeeping, w.writes);
  // Run adopt (in place of the scheduler's run create), Job (context on its
  // pod template), run Running, the durable ledger's record, agent status
  // (start and end coalesced), run final status (a succeeded run gets no
  // phase label).
  EXPECT_LE(w.writes, 6);
}

// A HeartbeatPolicy over the agent (team budget, cap, prices) adds no write
// to a heartbeat: its status is written by its own thread, its prices and
// stamp ride on writes the heartbeat makes anyway. Its prices are the stand-in
// runner's (which reports the cost at the Agent's prices): a price of its own
// would add a CostMismatch Event, a write, to every run.
TEST_F(OperatorTest, WritesPerHeartbeatWithAPolicy) {
  start_kubelet([](const json&) { return finishes_with(0.1); });
  json manifest = agent_manifest("omega", {{"prompt", "Heartbeat."}});
  manifest["metadata"]["labels"] = {{"team", "a"}};
  create_agent(manifest);
  create_policy("team-a",
                {{"selector", {{"matchLabels", {{"team", "a"}}}}},
                 {"budget", {{"monthlyCents", 100000}}},
                 {"maxConcurrentRuns", 10},
                 {"pricing",
                  {{{"provider", "openai"},
                    {"model", "*"},
                    {"inputCentsPerMillionTokens", kFakeInputCentsPerMillionTokens},
                    {"outputCentsPerMillionTokens", kFakeOutputCentsPerMillionTokens}}}}});
  start_operator({"--status-coalesce-seconds=60"});
  const WritesPerHeartbeat w = measure_writes("omega", 3);
  print_writes(" with a policy", w);
  EXPECT_EQ(w.dispatch, 2);
  EXPECT_EQ(w.dispatch + w.lifecycle + w.bookkeeping, w.writes);
  EXPECT_LE(w.writes, 6);
}

// A restarted operator finds each Agent's per-agent objects proven by the
// marked Lease in its cache and asks the API server nothing about them
// (otherwise five creates, answered AlreadyExists, and five reads per Agent:
// at 10,000 agents over an hour of its QPS after every restart). A
// Lease without the mark (an older operator's, or one its runner rewrote)
// costs one check of the five objects and is marked.
TEST_F(OperatorTest, ARestartAsksNothingAboutPerAgentObjects) {
  create_agent(agent_manifest("kappa", {{"prompt", "Heartbeat."}}));
  create_agent(agent_manifest("lambda", {{"prompt", "Heartbeat."}}));
  auto objects_made = [&](const std::string& name) {
    const kube::Result<json> lease =
        client_->get(res::kLeases, ns_, controllers::lease_name_for_agent(name));
    return lease.ok() &&
           controllers::agent_objects_made(&lease.value(), string_at(agent(name), "metadata/uid"));
  };
  auto metric = [&](const std::string& name) { return operator_->metric(name); };
  const std::string creates = R"(heartbeat_api_writes_total{kind="agent_object_create"})";
  const std::string marks = R"(heartbeat_api_writes_total{kind="agent_object_mark"})";
  const std::string posts = R"(rest_client_requests_total{method="POST"})";
  const std::string passes = "controller_runtime_reconcile_total";
  start_operator();
  ASSERT_TRUE(wait_until([&] { return objects_made("kappa") && objects_made("lambda"); }, 20s));
  EXPECT_EQ(metric(creates), 10);
  operator_->kill(SIGKILL);
  client_
      ->merge_patch(
          res::kLeases, ns_, controllers::lease_name_for_agent("lambda"),
          {{"metadata", {{"annotations", {{controllers::kAnnotationAgentObjectsMade, nullptr}}}}}})
      .or_throw();
  ASSERT_FALSE(objects_made("lambda"));

  start_operator();
  ASSERT_TRUE(wait_until([&] { return objects_made("lambda") && metric(passes) >= 2; }, 20s));
  std::this_thread::sleep_for(1s);
  EXPECT_EQ(metric(creates), 0);
  EXPECT_EQ(metric(marks), 1);
  EXPECT_EQ(metric(posts), 5) << "lambda's five creates, each answered AlreadyExists";
  operator_->kill(SIGKILL);

  start_operator();
  ASSERT_TRUE(wait_until([&] { return metric(passes) >= 2; }, 20s));
  std::this_thread::sleep_for(1s);
  EXPECT_EQ(metric(posts), 0);
  EXPECT_EQ(metric(creates) + metric(marks), 0);
  json kappa = agent("kappa");
  EXPECT_TRUE(condition(kappa, "Ready", "True")) << kappa.dump();
}

TEST_F(OperatorTest, CancelKillsTheJob) {
  start_kubelet([](const json&) {
    PodScript s;
    s.hang = true;
    return s;
  });
  create_agent(agent_manifest("eps", {{"prompt", "Heartbeat."}}));
  start_operator();
  client_->create(res::kHeartbeatRuns, ns_, manual_run("eps", "eps-1")).or_throw();
  ASSERT_TRUE(wait_until([&] { return run_phase("eps-1", "Running") && jobs() == 1; }, 20s));
  client_->merge_patch(res::kHeartbeatRuns, ns_, "eps-1", {{"spec", {{"cancel", true}}}})
      .or_throw();
  ASSERT_TRUE(wait_until([&] { return run_phase("eps-1", "Cancelled"); }, 30s));
  EXPECT_EQ(jobs(), 0u);
  EXPECT_EQ(run("eps-1")["status"]["reason"], "Cancelled");
}

TEST_F(OperatorTest, WatchesExactlyTheListedNamespaces) {
  // ns_ and `second` are watched; `outside` is not.
  struct Namespaces {
    std::shared_ptr<kube::Client> client;
    std::vector<std::string> names;
    ~Namespaces() {
      for (const std::string& ns : names) {
        try {
          client->remove(res::kNamespaces, "", ns).or_throw();
        } catch (const std::exception&) {
        }
      }
    }
  } extra{
      client_,
      {ClusterFixture::make_namespace("it-second"), ClusterFixture::make_namespace("it-outside")}};
  const std::string second = extra.names[0], outside = extra.names[1];
  start_kubelet([](const json&) { return finishes_with(0.25); });
  FakeKubelet second_kubelet(client_, second, [](const json&) { return finishes_with(0.25); });
  second_kubelet.start();
  for (const std::string& ns : {ns_, second, outside}) {
    client_->create(res::kAgents, ns, agent_manifest("zeta", {{"prompt", "Heartbeat."}}))
        .or_throw();
    client_->create(res::kHeartbeatRuns, ns, manual_run("zeta", "zeta-1")).or_throw();
  }
  start_operator({"--namespace=" + ns_ + "," + second});
  auto phase_in = [&](const std::string& ns) {
    return string_at(client_->get(res::kHeartbeatRuns, ns, "zeta-1").or_throw(), "status/phase");
  };
  ASSERT_TRUE(wait_until(
      [&] { return phase_in(ns_) == "Succeeded" && phase_in(second) == "Succeeded"; }, 30s));
  EXPECT_EQ(client_->get(res::kAgents, second, "zeta").or_throw()["status"]["spend"]["cents"],
            0.25);
  // The unwatched namespace is left alone: only the CRD's status default, no Job.
  EXPECT_EQ(phase_in(outside), "");
  EXPECT_EQ(client_->get(res::kAgents, outside, "zeta").or_throw()["status"],
            json({{"observedGeneration", 0}}));
  EXPECT_EQ(client_->list_all(res::kJobs, outside).or_throw()["items"].size(), 0u);
  second_kubelet.stop();
}

TEST_F(OperatorTest, TimeoutGivesTimedOut) {
  start_kubelet([](const json&) {
    PodScript s;
    s.hang = true;
    return s;
  });
  create_agent(agent_manifest("zeta", {{"prompt", "Heartbeat."}},
                              {{"runtime", {{"timeoutSeconds", 3}, {"graceSeconds", 1}}}}));
  start_operator();
  client_->create(res::kHeartbeatRuns, ns_, manual_run("zeta", "zeta-1")).or_throw();
  ASSERT_TRUE(wait_until([&] { return run_phase("zeta-1", "TimedOut"); }, 60s));
  EXPECT_EQ(run("zeta-1")["status"]["reason"], "DeadlineExceeded");
}

TEST_F(OperatorTest, StalledRunIsFailed) {
  start_kubelet([](const json&) {
    PodScript s;
    s.hang = true;
    s.beat = false;
    return s;
  });
  create_agent(agent_manifest("eta", {{"prompt", "Heartbeat."}}));
  start_operator();
  client_->create(res::kHeartbeatRuns, ns_, manual_run("eta", "eta-1")).or_throw();
  ASSERT_TRUE(wait_until([&] { return run_phase("eta-1", "Failed"); }, 40s));
  EXPECT_EQ(run("eta-1")["status"]["reason"], "Stalled");
  // The runbook's `-l heartbeat.dev/phase=Failed` finds it.
  EXPECT_TRUE(wait_until(
      [&] {
        return run("eta-1")["metadata"]["labels"].value("heartbeat.dev/phase", "") == "Failed";
      },
      10s));
  EXPECT_EQ(jobs(), 0u);
  EXPECT_TRUE(wait_until([&] { return events_with_reason("Stalled") >= 1; }, 10s));
}

TEST_F(OperatorTest, BeatingRunIsNotStalled) {
  start_kubelet([](const json&) {
    PodScript s = finishes_with(0);
    s.run_for = 14s;  // longer than --stall-timeout=10, but it beats
    return s;
  });
  create_agent(agent_manifest("theta", {{"prompt", "Heartbeat."}}));
  start_operator();
  client_->create(res::kHeartbeatRuns, ns_, manual_run("theta", "theta-1")).or_throw();
  ASSERT_TRUE(wait_until([&] { return run_phase("theta-1", "Succeeded"); }, 40s));
}

TEST_F(OperatorTest, BudgetBlocksAndQueuesManualRuns) {
  start_kubelet([](const json&) { return finishes_with(2.0); });
  create_agent(agent_manifest("iota", {{"prompt", "Heartbeat."}, {"interval", "30s"}},
                              {{"budget", {{"monthlyCents", 1}}}}));
  start_operator();
  client_->create(res::kHeartbeatRuns, ns_, manual_run("iota", "iota-1")).or_throw();
  ASSERT_TRUE(wait_until([&] { return condition(agent("iota"), "BudgetExceeded", "True"); }, 30s));
  json a = agent("iota");
  EXPECT_EQ(a["status"]["phase"], "BudgetExceeded");
  // A spent budget is a state the user chose: still Ready (kstatus Current).
  EXPECT_TRUE(condition(a, "Ready", "True"));
  EXPECT_EQ(kstatus_of(a).status, "Current");
  EXPECT_TRUE(wait_until([&] { return events_with_reason("BudgetExceeded") >= 1; }, 10s));
  client_->create(res::kHeartbeatRuns, ns_, manual_run("iota", "iota-2")).or_throw();
  ASSERT_TRUE(wait_until(
      [&] { return string_at(run("iota-2"), "status/message").find("waiting") == 0; }, 20s));
  // The first slot passes without a run.
  std::this_thread::sleep_for(35s);
  EXPECT_EQ(runs_of("iota").size(), 2u);
  EXPECT_EQ(string_at(run("iota-2"), "status/phase"), "Queued");

  // resume: Manual (the default): the stop waits for a person, who is told so.
  a = agent("iota");
  EXPECT_EQ(condition_reason(a, "BudgetExceeded"), "AwaitingApproval");
  EXPECT_EQ(a["status"]["budgetHold"]["budgetCents"], 1);
  EXPECT_TRUE(wait_until(
      [&] {
        return operator_->metric("heartbeat_budget_blocked_agents{reason=\"AwaitingApproval\"}") ==
               1;
      },
      10s));
  // Approved within the month: released (one Event), the month's block stands.
  for (int i = 0; i < 2; ++i) {  // a GitOps resync of the same value releases nothing more
    client_
        ->merge_patch(res::kAgents, ns_, "iota",
                      {{"metadata", {{"annotations", {{"heartbeat.dev/resume", "approved"}}}}}})
        .or_throw();
    ASSERT_TRUE(wait_until(
        [&] {
          return string_at(agent("iota"), "status/budgetHold/releasedBy") == "ResumeAnnotation";
        },
        20s));
  }
  EXPECT_TRUE(wait_until([&] { return events_with_reason("BudgetResumed") == 1; }, 10s));
  EXPECT_EQ(condition_reason(agent("iota"), "BudgetExceeded"), "BudgetExceeded");
  EXPECT_EQ(string_at(run("iota-2"), "status/phase"), "Queued");
  // A budget above the spend lets the queued manual run go.
  client_
      ->merge_patch(res::kAgents, ns_, "iota", {{"spec", {{"budget", {{"monthlyCents", 1000}}}}}})
      .or_throw();
  ASSERT_TRUE(wait_until([&] { return run_phase("iota-2", "Succeeded"); }, 40s));
  EXPECT_TRUE(condition(agent("iota"), "BudgetExceeded", "False"));
  EXPECT_EQ(events_with_reason("BudgetResumed"), 1);
}

// A memgpt_agent's pause moves its next slot; the same result from a
// react_agent (whose type does not support heartbeats) is ignored, warned.
TEST_F(OperatorTest, PauseHeartbeatsMovesTheNextSlot) {
  start_kubelet([](const json&) { return finishes_with(0.2, 2); });
  create_agent(agent_manifest("kappa", {{"prompt", "Heartbeat."}, {"interval", "30s"}},
                              {{"type", "memgpt_agent"}}));
  create_agent(agent_manifest("kappa-react", {{"prompt", "Heartbeat."}}));
  start_operator();
  client_->create(res::kHeartbeatRuns, ns_, manual_run("kappa", "kappa-1")).or_throw();
  client_->create(res::kHeartbeatRuns, ns_, manual_run("kappa-react", "kappa-react-1")).or_throw();
  ASSERT_TRUE(wait_until([&] { return agent("kappa")["status"].contains("pausedUntil"); }, 30s));
  json a = agent("kappa");
  const auto paused_until = *controllers::time_at(a, "status/pausedUntil");
  EXPECT_GT(paused_until, std::chrono::system_clock::now() + 100s);
  EXPECT_GE(*controllers::time_at(a, "status/nextHeartbeatTime"), paused_until);
  EXPECT_TRUE(condition(a, "Paused", "True"));
  // Slots pass while paused: no scheduled runs.
  std::this_thread::sleep_for(35s);
  EXPECT_EQ(runs_of("kappa").size(), 1u);
  EXPECT_EQ(string_at(run("kappa-react-1"), "status/phase"), "Succeeded");
  EXPECT_FALSE(run("kappa-react-1")["status"].contains("pauseUntil"));
  EXPECT_FALSE(agent("kappa-react")["status"].contains("pausedUntil"));
  EXPECT_GE(events_with_reason("PauseIgnored"), 1u);
}

// Idle backoff on the real API server: the run's result is judged once
// (status.idle), the agent's streak and gap follow, and the API server takes
// the new fields; a manual run that acts starts the count again.
TEST_F(OperatorTest, AnIdleRunStretchesTheIntervalAndAnActingRunResetsIt) {
  start_kubelet([](const json& pod) {
    // Pods are named after their Job, which is named after its run.
    const std::string name = string_at(pod, "metadata/name");
    if (name.rfind("idler-down", 0) == 0) {  // the provider's outage: the runner's exit 69
      PodScript s = finishes_with(0.01, std::nullopt, api::kExitProviderError);
      s.termination_message = FakeKubelet::result(0.01, std::nullopt, "provider_error");
      return s;
    }
    const bool manual = name.rfind("idler-m", 0) == 0;
    return manual ? finishes_saying("rotated the logs", 1) : finishes_saying("HEARTBEAT_OK", 0);
  });
  json a = create_agent(agent_manifest(
      "idler", {{"prompt", "Heartbeat. Answer HEARTBEAT_OK when there is nothing to do."},
                {"interval", "30s"},
                {"idleBackoff", {{"after", 1}, {"maxInterval", "1m"}}}}));
  const auto created = *controllers::time_at(a, "metadata/creationTimestamp");
  start_operator();
  const std::string first = schedule::scheduled_run_name("idler", created + 30s);
  // The agent's status (the ledger) is written before the run's final one.
  auto judged = [&](const std::string& name) {
    return wait_until([&] { return run(name)["status"].contains("idle"); }, 10s);
  };
  ASSERT_TRUE(wait_until([&] { return agent("idler")["status"]["idleStreak"] == 1; }, 50s));
  ASSERT_TRUE(judged(first));
  EXPECT_EQ(run(first)["status"]["idle"], true);
  json idle = agent("idler");
  EXPECT_EQ(idle["status"]["effectiveInterval"], "1m");
  EXPECT_EQ(string_at(idle, "status/nextHeartbeatTime"), schedule::format_rfc3339(created + 90s))
      << "the 60 s slot is backed off";

  client_->create(res::kHeartbeatRuns, ns_, manual_run("idler", "idler-m1")).or_throw();
  ASSERT_TRUE(wait_until([&] { return agent("idler")["status"]["idleStreak"] == 0; }, 30s));
  ASSERT_TRUE(judged("idler-m1"));
  EXPECT_EQ(run("idler-m1")["status"]["idle"], false);
  EXPECT_EQ(agent("idler")["status"]["effectiveInterval"], "30s");
  EXPECT_EQ(runs_of("idler").size(), 2u) << "no slot ran while backed off";

  // Provider backoff: a run that fails on the model provider stretches the
  // gap to two intervals, whatever started it.
  client_->create(res::kHeartbeatRuns, ns_, manual_run("idler", "idler-down1")).or_throw();
  ASSERT_TRUE(wait_until([&] { return agent("idler")["status"]["providerErrorStreak"] == 1; }, 30s))
      << run("idler-down1")["status"].dump() << "\n"
      << agent("idler")["status"].dump();
  ASSERT_TRUE(wait_until([&] { return run("idler-down1")["status"].contains("reason"); }, 10s));
  EXPECT_EQ(run("idler-down1")["status"]["reason"], "ProviderError");
  EXPECT_EQ(agent("idler")["status"]["effectiveInterval"], "1m");
}

// --max-concurrent-runs on the real API server: five agents asked to run at
// once with a cap of 2 never have more than two runs Running; the others wait
// Queued with reason ConcurrencyLimited, and every one runs in the end.
// Five agents due together under a cap of 2 (`limit` names it): at most
// two run at once, all five run, the waiting ones say why.
void OperatorTest::five_agents_two_at_a_time(const std::vector<std::string>& operator_flags,
                                             const std::string& limit,
                                             const std::function<void()>& each_poll) {
  start_kubelet([](const json&) {
    PodScript s = finishes_with(0.01);
    s.run_for = 3s;
    return s;
  });
  const std::vector<std::string> names = {"cap-a", "cap-b", "cap-c", "cap-d", "cap-e"};
  for (const std::string& name : names) create_agent(agent_manifest(name, {{"prompt", "Work."}}));
  start_operator(operator_flags);
  for (const std::string& name : names) {
    client_->create(res::kHeartbeatRuns, ns_, manual_run(name, name + "-m1")).or_throw();
  }
  size_t most_running = 0;
  std::set<std::string> limited;
  const bool all_done = wait_until(
      [&] {
        const json list = client_->list_all(res::kHeartbeatRuns, ns_).or_throw();
        size_t running = 0, succeeded = 0;
        for (const json& r : list["items"]) {
          const std::string phase = string_at(r, "status/phase");
          running += phase == "Running" ? 1 : 0;
          succeeded += phase == "Succeeded" ? 1 : 0;
          if (string_at(r, "status/reason") == controllers::kReasonConcurrencyLimited) {
            limited.insert(string_at(r, "metadata/name"));
            EXPECT_EQ(phase, "Queued");
            EXPECT_THAT(string_at(r, "status/message"), ::testing::HasSubstr(limit));
          }
        }
        most_running = std::max(most_running, running);
        if (each_poll) each_poll();
        return succeeded == names.size();
      },
      90s, 50ms);
  EXPECT_TRUE(all_done) << "every waiting run starts once a place frees";
  EXPECT_LE(most_running, 2u);
  EXPECT_EQ(most_running, 2u) << "the cap is used, not just respected";
  EXPECT_GE(limited.size(), 1u) << "the runs beyond the cap said why they waited";
  EXPECT_TRUE(wait_until([&] { return operator_->metric("heartbeat_concurrent_runs") == 0; }, 10s))
      << "every place is given back";
  EXPECT_EQ(operator_->metric("heartbeat_runs_waiting_for_place"), 0);
  for (const std::string& name : names) {
    EXPECT_NE(string_at(run(name + "-m1"), "status/reason"), controllers::kReasonConcurrencyLimited)
        << name << ": the reason is gone once it ran";
  }
}

TEST_F(OperatorTest, ACapOfTwoRunsFiveWaitingAgentsTwoAtATime) {
  five_agents_two_at_a_time({"--max-concurrent-runs=2"}, "--max-concurrent-runs");
}

// The same cap set by a team's HeartbeatPolicy (every Agent of the namespace).
TEST_F(OperatorTest, APolicyCapOfTwoRunsFiveAgentsTwoAtATime) {
  create_policy("two-at-a-time", {{"maxConcurrentRuns", 2}});
  // The policy's status counts its agents' started runs (the gate's count,
  // written every kPolicyStatusInterval).
  const auto counted = [&] {
    const json p = client_->get(res::kHeartbeatPolicies, ns_, "two-at-a-time").or_throw();
    const json* n = controllers::find_path(p, "status/runningRuns");
    return n != nullptr && n->is_number_integer() ? n->get<int64_t>() : int64_t{-1};
  };
  int64_t most_counted = -1;
  five_agents_two_at_a_time({}, "HeartbeatPolicy two-at-a-time, maxConcurrentRuns",
                            [&] { most_counted = std::max(most_counted, counted()); });
  EXPECT_GE(most_counted, 1) << "runningRuns counted the runs going on";
  EXPECT_LE(most_counted, 2) << "runningRuns counts started runs, not queued ones";
  EXPECT_TRUE(wait_until([&] { return counted() == 0; }, 15s)) << "and none once all ended";
}

// A HeartbeatPolicy's team budget on the real API server: once the agents
// it selects spent it together, none of them starts a run (reason
// PolicyBudgetExceeded naming the policy) while an agent it does not select
// runs on; the policy's status counts them; a raised budget lets them go.
TEST_F(OperatorTest, ATeamBudgetStopsEverySelectedAgentAtOnce) {
  start_kubelet([](const json&) { return finishes_with(2.0); });
  for (const auto& [name, team] : std::vector<std::pair<std::string, std::string>>{
           {"team-a1", "a"}, {"team-a2", "a"}, {"team-b1", "b"}}) {
    json manifest = agent_manifest(name, {{"prompt", "Work."}});
    manifest["metadata"]["labels"] = {{"team", team}};
    create_agent(manifest);
  }
  auto policy = [](const std::string& name, const std::string& team, int64_t cents) {
    return json{{"apiVersion", "heartbeat.dev/v1alpha1"},
                {"kind", "HeartbeatPolicy"},
                {"metadata", {{"name", name}}},
                {"spec",
                 {{"selector", {{"matchLabels", {{"team", team}}}}},
                  {"budget", {{"monthlyCents", cents}}}}}};
  };
  client_->create(res::kHeartbeatPolicies, ns_, policy("team-a", "a", 3)).or_throw();
  client_->create(res::kHeartbeatPolicies, ns_, policy("nobody", "zzz", 3)).or_throw();
  start_operator();
  client_->create(res::kHeartbeatRuns, ns_, manual_run("team-a1", "team-a1-m1")).or_throw();
  ASSERT_TRUE(wait_until([&] { return run_phase("team-a1-m1", "Succeeded"); }, 30s));
  client_->create(res::kHeartbeatRuns, ns_, manual_run("team-a2", "team-a2-m1")).or_throw();
  ASSERT_TRUE(wait_until([&] { return run_phase("team-a2-m1", "Succeeded"); }, 30s));
  // 2 + 2 cents of a 3-cent team budget: both team agents stop.
  for (const char* name : {"team-a1", "team-a2"}) {
    ASSERT_TRUE(wait_until(
        [&] { return condition_reason(agent(name), "BudgetExceeded") == "PolicyBudgetExceeded"; },
        30s))
        << name;
    const json stopped = agent(name);
    EXPECT_THAT(string_at(*condition_of(stopped, "BudgetExceeded"), "message"),
                ::testing::HasSubstr("HeartbeatPolicy team-a"));
  }
  client_->create(res::kHeartbeatRuns, ns_, manual_run("team-a1", "team-a1-m2")).or_throw();
  client_->create(res::kHeartbeatRuns, ns_, manual_run("team-b1", "team-b1-m1")).or_throw();
  ASSERT_TRUE(wait_until([&] { return run_phase("team-b1-m1", "Succeeded"); }, 30s))
      << "an agent the policy does not select runs on";
  EXPECT_EQ(string_at(run("team-a1-m2"), "status/phase"), "Queued");
  EXPECT_THAT(string_at(run("team-a1-m2"), "status/message"),
              ::testing::HasSubstr("HeartbeatPolicy team-a"));
  // The policy's status, written off the hot path within a few seconds.
  ASSERT_TRUE(wait_until(
      [&] {
        const json p = client_->get(res::kHeartbeatPolicies, ns_, "team-a").or_throw();
        return p["status"].value("agents", 0) == 2 &&
               controllers::number_at(p, "status/spend/cents").value_or(0) == 4 &&
               condition(p, "BudgetExceeded", "True");
      },
      20s));
  EXPECT_TRUE(wait_until(
      [&] {
        return condition(client_->get(res::kHeartbeatPolicies, ns_, "nobody").or_throw(),
                         "SelectorMatchesNothing", "True");
      },
      20s))
      << "a selector that matches nothing says so";
  // A team budget raised lets the queued run go.
  client_
      ->merge_patch(res::kHeartbeatPolicies, ns_, "team-a",
                    {{"spec", {{"budget", {{"monthlyCents", 1000}}}}}})
      .or_throw();
  ASSERT_TRUE(wait_until([&] { return run_phase("team-a1-m2", "Succeeded"); }, 30s));
  EXPECT_TRUE(
      wait_until([&] { return condition(agent("team-a2"), "BudgetExceeded", "False"); }, 20s));
}

// The tenant's attack on the real API server: an Agent priced 0 under a
// HeartbeatPolicy with a price is charged the policy's price, and the run
// records that the policy's price applied (status.charge survives the
// CRD's schema pruning).
TEST_F(OperatorTest, AnAgentPricedZeroIsChargedThePolicysPrice) {
  start_kubelet([](const json&) { return finishes_with(0.0); });
  json manifest = agent_manifest("free-rider", {{"prompt", "Work."}});
  manifest["spec"]["model"]["pricing"] = {{"inputCentsPerMillionTokens", 0},
                                          {"outputCentsPerMillionTokens", 0}};
  create_agent(manifest);
  create_policy("prices", {{"pricing", json::array({{{"provider", "openai"},
                                                     {"model", "*"},
                                                     {"inputCentsPerMillionTokens", 1000},
                                                     {"outputCentsPerMillionTokens", 10000}}})}});
  start_operator();
  client_->create(res::kHeartbeatRuns, ns_, manual_run("free-rider", "free-rider-m1")).or_throw();
  ASSERT_TRUE(
      wait_until([&] { return run("free-rider-m1")["status"]["costRecorded"] == true; }, 30s));
  const json r = run("free-rider-m1");
  EXPECT_GT(controllers::number_at(r, "status/usage/costCents").value_or(0), 0.0) << r["status"];
  EXPECT_EQ(string_at(r, "status/charge/source"), "policy");
  EXPECT_EQ(string_at(r, "status/charge/policy"), ns_ + "/prices");
  EXPECT_GT(controllers::number_at(agent("free-rider"), "status/spend/cents").value_or(0), 0.0);
}

// The audit record outlives its Agent: deleting the Agent garbage-collects
// what it owns (its memory ConfigMap: the positive control that the
// collector ran) but not its runs, which keep their charge and policies; an
// Agent created again under the name neither adopts nor counts them; once
// --run-retention has passed since a run finished, the operator deletes it.
// Each run's audit line is on the operator's log exactly once.
TEST_F(OperatorTest, ADeletedAgentsRunsOutliveItUntilTheirRetention) {
  constexpr auto kRetention = 25s;
  start_kubelet([](const json&) { return finishes_with(2.0); });
  create_policy("team-a", {{"selector", {{"matchLabels", {{"team", "a"}}}}},
                           {"budget", {{"monthlyCents", 100000}}}});
  json manifest = agent_manifest("gone", {{"prompt", "Work."}});
  manifest["metadata"]["labels"] = {{"team", "a"}};
  create_agent(manifest);
  start_operator({"--run-retention=" + std::to_string(kRetention.count()) + "s"});
  client_->create(res::kHeartbeatRuns, ns_, manual_run("gone", "gone-m1")).or_throw();
  ASSERT_TRUE(
      wait_until([&] { return controllers::bool_at(run("gone-m1"), "status/costRecorded"); }, 30s));
  const json finished = run("gone-m1");
  EXPECT_FALSE(finished["metadata"].contains("ownerReferences"));
  EXPECT_EQ(string_at(finished, "status/charge/provider"), "openai");
  EXPECT_EQ(string_at(finished, "status/charge/model"), "stand-in");
  EXPECT_EQ(controllers::number_at(finished, "status/charge/outputCentsPerMillionTokens"),
            kFakeOutputCentsPerMillionTokens);
  EXPECT_EQ(finished["status"]["policies"], json::array({"team-a"}));
  const std::string old_uid = string_at(agent("gone"), "metadata/uid");
  const double spent = controllers::number_at(agent("gone"), "status/spend/cents").value_or(0);
  EXPECT_GT(spent, 0);

  client_->remove(res::kAgents, ns_, "gone").or_throw();
  const std::string memory = controllers::memory_config_map_name("gone");
  ASSERT_TRUE(wait_until([&] { return !client_->get(res::kConfigMaps, ns_, memory).ok(); }, 30s))
      << "the garbage collector removes what the Agent owns";
  ASSERT_TRUE(client_->get(res::kHeartbeatRuns, ns_, "gone-m1").ok())
      << "the run is not the Agent's to take along";
  EXPECT_EQ(run("gone-m1")["status"]["charge"], finished["status"]["charge"]);

  // The same name again: the old run is not this Agent's (not counted again, not adopted).
  create_agent(agent_manifest("gone", {{"prompt", "Work."}}));
  ASSERT_TRUE(wait_until([&] { return agent("gone")["status"].contains("phase"); }, 20s));
  EXPECT_NE(string_at(agent("gone"), "metadata/uid"), old_uid);
  // Its month's spend is the name's (the ledger), not the new object's 0.
  EXPECT_EQ(controllers::number_at(agent("gone"), "status/spend/cents").value_or(0), spent);
  EXPECT_EQ(run("gone-m1")["metadata"]["annotations"].value("heartbeat.dev/agent-uid", ""),
            old_uid);

  // Still there short of its retention, gone after it.
  const auto finished_at = *controllers::time_at(finished, "status/finishedAt");
  const auto short_of = finished_at + kRetention - 5s;
  if (std::chrono::system_clock::now() < short_of) {
    std::this_thread::sleep_until(short_of);
    EXPECT_TRUE(client_->get(res::kHeartbeatRuns, ns_, "gone-m1").ok())
        << "deleted before its retention";
  }
  ASSERT_TRUE(wait_until(
      [&] {
        return client_->get(res::kHeartbeatRuns, ns_, "gone-m1").is(kube::ErrorKind::kNotFound);
      },
      kRetention + 20s))
      << "kept past its retention";

  std::ifstream log(operator_->log_path());
  int audit_lines = 0;
  for (std::string line; std::getline(log, line);) {
    audit_lines += line.find("heartbeat_run") != std::string::npos &&
                   line.find("gone-m1") != std::string::npos;
  }
  EXPECT_EQ(audit_lines, 1);
}

// A HeartbeatPolicy's kill switch on the real API server: paused, a manual
// run of an agent it selects stays Queued, the Agent's Paused condition
// (reason PolicyPaused) names the policy, and the policy says Paused=True;
// an agent it does not select runs on (the control); resumed, the held run
// runs.
TEST_F(OperatorTest, APausedPolicyHoldsItsAgentsUntilResumed) {
  start_kubelet([](const json&) { return finishes_with(0.1); });
  for (const auto& [name, team] :
       std::vector<std::pair<std::string, std::string>>{{"held-a", "a"}, {"free-b", "b"}}) {
    json manifest = agent_manifest(name, {{"prompt", "Work."}});
    manifest["metadata"]["labels"] = {{"team", team}};
    create_agent(manifest);
  }
  create_policy("stop-a", {{"selector", {{"matchLabels", {{"team", "a"}}}}}, {"paused", true}});
  start_operator();
  ASSERT_TRUE(wait_until(
      [&] { return condition_reason(agent("held-a"), "Paused") == "PolicyPaused"; }, 30s));
  EXPECT_THAT(string_at(*condition_of(agent("held-a"), "Paused"), "message"),
              ::testing::HasSubstr("HeartbeatPolicy " + ns_ + "/stop-a"));
  client_->create(res::kHeartbeatRuns, ns_, manual_run("held-a", "held-a-m1")).or_throw();
  client_->create(res::kHeartbeatRuns, ns_, manual_run("free-b", "free-b-m1")).or_throw();
  ASSERT_TRUE(wait_until([&] { return run_phase("free-b-m1", "Succeeded"); }, 30s))
      << "an agent the policy does not select runs on";
  ASSERT_TRUE(wait_until(
      [&] {
        return string_at(run("held-a-m1"), "status/message").find("stop-a") != std::string::npos;
      },
      20s));
  EXPECT_EQ(string_at(run("held-a-m1"), "status/phase"), "Queued");
  EXPECT_TRUE(wait_until(
      [&] {
        return condition(client_->get(res::kHeartbeatPolicies, ns_, "stop-a").or_throw(), "Paused",
                         "True");
      },
      20s))
      << "the policy says it is paused";
  client_->merge_patch(res::kHeartbeatPolicies, ns_, "stop-a", {{"spec", {{"paused", false}}}})
      .or_throw();
  ASSERT_TRUE(wait_until([&] { return run_phase("held-a-m1", "Succeeded"); }, 30s))
      << "resumed, the held run runs";
  EXPECT_TRUE(wait_until([&] { return condition(agent("held-a"), "Paused", "False"); }, 20s));
}

// spec.cancelRunning on the real API server: a policy paused alone lets a
// run in flight go on (its Job stays); with cancelRunning the run is
// Cancelled with reason PolicyPaused naming the policy, and its Job deleted.
TEST_F(OperatorTest, APausedPolicyCancelsRunsInFlightOnlyWithCancelRunning) {
  start_kubelet([](const json&) {
    PodScript s;
    s.hang = true;
    return s;
  });
  create_agent(agent_manifest("stuck", {{"prompt", "Work."}}));
  create_policy("kill", json::object());
  start_operator();
  client_->create(res::kHeartbeatRuns, ns_, manual_run("stuck", "stuck-1")).or_throw();
  ASSERT_TRUE(wait_until([&] { return run_phase("stuck-1", "Running") && jobs() == 1; }, 20s));
  client_->merge_patch(res::kHeartbeatPolicies, ns_, "kill", {{"spec", {{"paused", true}}}})
      .or_throw();
  ASSERT_TRUE(wait_until(
      [&] { return condition_reason(agent("stuck"), "Paused") == "PolicyPaused"; }, 20s));
  std::this_thread::sleep_for(2s);
  EXPECT_EQ(string_at(run("stuck-1"), "status/phase"), "Running") << "paused alone: it goes on";
  EXPECT_EQ(jobs(), 1u);
  client_->merge_patch(res::kHeartbeatPolicies, ns_, "kill", {{"spec", {{"cancelRunning", true}}}})
      .or_throw();
  ASSERT_TRUE(wait_until([&] { return run_phase("stuck-1", "Cancelled"); }, 30s));
  EXPECT_EQ(string_at(run("stuck-1"), "status/reason"), "PolicyPaused");
  EXPECT_THAT(string_at(run("stuck-1"), "status/message"),
              ::testing::HasSubstr("HeartbeatPolicy " + ns_ + "/kill"));
  EXPECT_TRUE(wait_until([&] { return jobs() == 0u; }, 10s));
}

// A spent team budget on the real API server: once one agent's run spends
// the team's month, the other agent's run in flight goes on while the policy
// says onExceeded: Finish (the control), and is Cancelled with reason
// PolicyBudgetExceeded naming the policy, its Job deleted, once it says
// Cancel.
TEST_F(OperatorTest, ASpentTeamBudgetCancelsRunsInFlightUnlessOnExceededFinish) {
  start_kubelet([](const json& pod) {
    const json* annotations = controllers::find_path(pod, "metadata/annotations");
    const std::string agent_name =
        annotations != nullptr ? annotations->value(controllers::kAnnotationAgentName, "") : "";
    if (agent_name == "spender") return finishes_with(5.0);
    PodScript s;
    s.hang = true;
    return s;
  });
  // Per-run caps of 1 and 2 cents let both runs hold room in the 3-cent
  // team budget together; the spender's runner then reports 5 (past what
  // it held, as a runner's misestimate would), which spends the budget.
  for (const auto& [name, per_run_cents] : {std::pair{"spender", 2}, std::pair{"worker", 1}}) {
    json manifest = agent_manifest(name, {{"prompt", "Work."}});
    manifest["metadata"]["labels"] = {{"team", "a"}};
    manifest["spec"]["budget"] = {{"perRunCents", per_run_cents}};
    create_agent(manifest);
  }
  create_policy("team", {{"selector", {{"matchLabels", {{"team", "a"}}}}},
                         {"budget", {{"monthlyCents", 3}}},
                         {"onExceeded", "Finish"}});
  start_operator();
  client_->create(res::kHeartbeatRuns, ns_, manual_run("worker", "worker-1")).or_throw();
  ASSERT_TRUE(wait_until([&] { return run_phase("worker-1", "Running"); }, 20s));
  client_->create(res::kHeartbeatRuns, ns_, manual_run("spender", "spender-1")).or_throw();
  ASSERT_TRUE(wait_until([&] { return run_phase("spender-1", "Succeeded"); }, 30s));
  ASSERT_TRUE(wait_until(
      [&] { return condition_reason(agent("worker"), "BudgetExceeded") == "PolicyBudgetExceeded"; },
      20s));
  std::this_thread::sleep_for(2s);
  EXPECT_EQ(string_at(run("worker-1"), "status/phase"), "Running") << "Finish: it goes on";
  client_->merge_patch(res::kHeartbeatPolicies, ns_, "team", {{"spec", {{"onExceeded", "Cancel"}}}})
      .or_throw();
  ASSERT_TRUE(wait_until([&] { return run_phase("worker-1", "Cancelled"); }, 30s))
      << run("worker-1").dump(2);
  EXPECT_EQ(string_at(run("worker-1"), "status/reason"), "PolicyBudgetExceeded");
  EXPECT_THAT(string_at(run("worker-1"), "status/message"),
              ::testing::HasSubstr("HeartbeatPolicy " + ns_ + "/team"));
  EXPECT_TRUE(wait_until(
      [&] {
        return client_->get(res::kJobs, ns_, controllers::job_name_for_run("worker-1"))
            .is(kube::ErrorKind::kNotFound);
      },
      10s));
}

// Daily budgets on the real API server: a run that spends a team's day (in
// the policy's time zone) holds the team's other agent with reason
// PolicyDailyBudgetExceeded, its manual run Queued, and the policy shows the
// day's spend; an Agent's own dailyCents holds it (DailyBudgetExceeded)
// while an agent under neither (the control) runs on.
TEST_F(OperatorTest, ASpentDayHoldsTheTeamAndTheAgent) {
  start_kubelet([](const json&) { return finishes_with(5.0); });
  for (const char* name : {"spender", "worker"}) {
    json manifest = agent_manifest(name, {{"prompt", "Work."}});
    manifest["metadata"]["labels"] = {{"team", "a"}};
    create_agent(manifest);
  }
  json own = agent_manifest("frugal", {{"prompt", "Work."}});
  own["spec"]["budget"] = {{"dailyCents", 1}};
  create_agent(own);
  create_agent(agent_manifest("free", {{"prompt", "Work."}}));
  create_policy("team", {{"selector", {{"matchLabels", {{"team", "a"}}}}},
                         {"budget", {{"dailyCents", 3}}},
                         {"timeZone", "Asia/Tokyo"}});
  start_operator();
  for (const char* name : {"spender", "frugal", "free"}) {
    client_->create(res::kHeartbeatRuns, ns_, manual_run(name, std::string(name) + "-1"))
        .or_throw();
    ASSERT_TRUE(wait_until([&] { return run_phase(std::string(name) + "-1", "Succeeded"); }, 30s))
        << name;
  }
  ASSERT_TRUE(wait_until(
      [&] {
        return condition_reason(agent("worker"), "BudgetExceeded") == "PolicyDailyBudgetExceeded";
      },
      20s));
  ASSERT_TRUE(wait_until(
      [&] { return condition_reason(agent("frugal"), "BudgetExceeded") == "DailyBudgetExceeded"; },
      20s));
  for (const char* name : {"worker", "frugal", "free"}) {
    client_->create(res::kHeartbeatRuns, ns_, manual_run(name, std::string(name) + "-2"))
        .or_throw();
  }
  ASSERT_TRUE(wait_until([&] { return run_phase("free-2", "Succeeded"); }, 30s)) << "the control";
  EXPECT_EQ(string_at(run("worker-2"), "status/phase"), "Queued");
  EXPECT_EQ(string_at(run("frugal-2"), "status/phase"), "Queued");
  ASSERT_TRUE(wait_until(
      [&] {
        const json p = client_->get(res::kHeartbeatPolicies, ns_, "team").or_throw();
        return string_at(p, "status/spendToday/timeZone") == "Asia/Tokyo" &&
               controllers::number_at(p, "status/spendToday/cents").value_or(0) >= 5.0;
      },
      20s));
  // Each agent shows its own day (UTC here): the frugal one what it spent.
  const json frugal = agent("frugal");
  EXPECT_EQ(string_at(frugal, "status/spendToday/timeZone"), "UTC");
  EXPECT_EQ(controllers::number_at(frugal, "status/spendToday/cents").value_or(0), 5.0);
}

// Quota-aware holds on the real API server: one agent's run ends on a
// spent provider quota; the agent sharing its endpoint and key Secret is
// held (ProviderThrottled, its manual run Queued) until the reset, while an
// agent on another key runs on.
TEST_F(OperatorTest, AQuotaStopHoldsEveryAgentOnTheSameKey) {
  start_kubelet([](const json& pod) {
    const json* annotations = controllers::find_path(pod, "metadata/annotations");
    const std::string agent_name =
        annotations != nullptr ? annotations->value(controllers::kAnnotationAgentName, "") : "";
    PodScript s = finishes_with(0.01);
    if (agent_name != "quota-a") return s;
    json result = json::parse(s.termination_message);
    result["stopReason"] = "provider_quota";
    result["error"] = "openai: HTTP 429: You exceeded your current quota";
    result["providerResetAt"] =
        hb::schedule::format_rfc3339(std::chrono::system_clock::now() + std::chrono::hours(1));
    s.termination_message = result.dump();
    s.exit_code = 69;
    return s;
  });
  create_agent(agent_manifest("quota-a", {{"prompt", "Work."}}));
  create_agent(agent_manifest("quota-b", {{"prompt", "Work."}}));
  json other_key = agent_manifest("quota-c", {{"prompt", "Work."}});
  other_key["spec"]["model"]["apiKeySecretRef"]["key"] = "token";
  create_agent(other_key);
  start_operator();
  client_->create(res::kHeartbeatRuns, ns_, manual_run("quota-a", "quota-a-1")).or_throw();
  ASSERT_TRUE(wait_until([&] { return run_phase("quota-a-1", "Failed"); }, 30s));
  const json failed = run("quota-a-1");
  EXPECT_EQ(string_at(failed, "status/stopReason"), "provider_quota");
  EXPECT_FALSE(string_at(failed, "status/providerResetAt").empty());
  for (const char* name : {"quota-a", "quota-b"}) {
    ASSERT_TRUE(
        wait_until([&] { return condition(agent(name), "ProviderThrottled", "True"); }, 30s))
        << name;
  }
  const json b = agent("quota-b");
  EXPECT_THAT(string_at(*condition_of(b, "ProviderThrottled"), "message"),
              ::testing::HasSubstr("HeartbeatRun quota-a-1 of Agent quota-a"));
  EXPECT_TRUE(wait_until([&] { return events_with_reason("ProviderThrottled") >= 2; }, 10s));
  client_->create(res::kHeartbeatRuns, ns_, manual_run("quota-b", "quota-b-1")).or_throw();
  client_->create(res::kHeartbeatRuns, ns_, manual_run("quota-c", "quota-c-1")).or_throw();
  ASSERT_TRUE(wait_until([&] { return run_phase("quota-c-1", "Succeeded"); }, 30s))
      << "an agent on another key runs on";
  EXPECT_EQ(string_at(run("quota-b-1"), "status/phase"), "Queued");
  EXPECT_THAT(string_at(run("quota-b-1"), "status/message"), ::testing::HasSubstr("quota"));
  const json c = agent("quota-c");
  EXPECT_EQ(condition_of(c, "ProviderThrottled"), nullptr);
  // A restarted operator rebuilds the hold from the runs.
  operator_->kill(SIGKILL);
  start_operator();
  std::this_thread::sleep_for(3s);
  EXPECT_EQ(string_at(run("quota-b-1"), "status/phase"), "Queued");
  EXPECT_TRUE(condition(agent("quota-b"), "ProviderThrottled", "True"));
}

// @mentions on the real API server: two agents that always mention each
// other wake each other three times in a row and no more; an agent that did
// not opt in is never woken, and the mentioning agent cannot name itself.
TEST_F(OperatorTest, MentionsWakeAnotherAgentAndAPingPongStopsAtDepthThree) {
  start_kubelet([](const json& pod) {
    const bool ping = string_at(pod, "metadata/name").rfind("ping-", 0) == 0;
    return finishes_saying(ping ? "@pong your turn (not @closed, not @ping)" : "@ping your turn");
  });
  create_agent(agent_manifest("ping", {{"prompt", "Play."}, {"wakeOnMention", true}}));
  create_agent(agent_manifest("pong", {{"prompt", "Play."}, {"mentionableBy", {"ping"}}}));
  create_agent(agent_manifest("closed", {{"prompt", "Play."}}));
  start_operator();
  client_->create(res::kHeartbeatRuns, ns_, manual_run("ping", "ping-1")).or_throw();
  ASSERT_TRUE(wait_until([&] { return events_with_reason("MentionChainStopped") >= 1; }, 60s));
  std::this_thread::sleep_for(3s);  // nothing more comes
  const auto ping_runs = runs_of("ping");
  const auto pong_runs = runs_of("pong");
  ASSERT_EQ(ping_runs.size(), 2u);
  ASSERT_EQ(pong_runs.size(), 2u);
  EXPECT_TRUE(runs_of("closed").empty());
  std::map<std::string, json> by_depth;  // "1", "2", "3": the chain's runs
  for (const auto* runs : {&ping_runs, &pong_runs}) {
    for (const json& r : *runs) {
      EXPECT_EQ(string_at(r, "status/phase"), "Succeeded") << r.dump();
      const json annotations = r["metadata"].value("annotations", json::object());
      by_depth[annotations.value(controllers::kAnnotationMentionDepth, "")] = r;
    }
  }
  ASSERT_EQ(by_depth.size(), 4u);  // "" (the manual run), 1, 2, 3
  EXPECT_EQ(string_at(by_depth["1"], "spec/agentRef/name"), "pong");
  EXPECT_EQ(string_at(by_depth["1"], "spec/invocationSource"), "callback");
  EXPECT_EQ(string_at(by_depth["1"], "spec/triggerDetail"), "mentioned by ping in run ping-1");
  EXPECT_EQ(string_at(by_depth["2"], "spec/agentRef/name"), "ping");
  EXPECT_EQ(string_at(by_depth["3"], "spec/agentRef/name"), "pong");
}

TEST_F(OperatorTest, InvalidSpecNamesTheFieldAndRunsNothing) {
  start_operator();
  create_agent(agent_manifest(
      "lambda", {{"prompt", "Heartbeat."}, {"interval", "30s"}, {"schedule", "* * * * *"}}));
  ASSERT_TRUE(wait_until([&] { return condition(agent("lambda"), "SpecValid", "False"); }, 20s));
  EXPECT_EQ(agent("lambda")["status"]["phase"], "Invalid");
  EXPECT_TRUE(runs_of("lambda").empty());
}

// H and spread take their values from the Agent's namespace/name, timeZone
// from the OS tzdata: the slot the operator announces is the one the pure
// schedule gives, and the API server takes the new syntax (parentheses,
// Auto, an IANA name); an unknown zone is named.
TEST_F(OperatorTest, HashedZonedAndSpreadSchedulesAnnounceTheirOwnSlots) {
  start_operator();
  json hashed = create_agent(
      agent_manifest("hashed", {{"prompt", "Heartbeat."}, {"schedule", "H(0-29) H * * *"}}));
  json spread = create_agent(
      agent_manifest("spread", {{"prompt", "Heartbeat."}, {"interval", "1h"}, {"spread", "Auto"}}));
  create_agent(agent_manifest("overspread",
                              {{"prompt", "Heartbeat."}, {"interval", "1h"}, {"spread", "2h"}}));
  json berlin = create_agent(agent_manifest(
      "berlin",
      {{"prompt", "Heartbeat."}, {"schedule", "0 9 * * *"}, {"timeZone", "Europe/Berlin"}}));
  create_agent(agent_manifest(
      "mars", {{"prompt", "Heartbeat."}, {"schedule", "0 9 * * *"}, {"timeZone", "Mars/Olympus"}}));
  const auto expected = [&](const json& a, const char* interval, const char* cron, const char* how,
                            const char* zone) {
    const auto parsed = schedule::parse_schedule(
        {interval, cron, how, schedule::schedule_hash_key(ns_, string_at(a, "metadata/name")),
         zone});
    EXPECT_TRUE(parsed.ok()) << parsed.error;
    const auto created = *controllers::time_at(a, "metadata/creationTimestamp");
    return schedule::format_rfc3339(*schedule::first_slot_after(*parsed.value, created, created));
  };
  ASSERT_TRUE(wait_until(
      [&] {
        return agent("hashed")["status"].contains("nextHeartbeatTime") &&
               agent("spread")["status"].contains("nextHeartbeatTime") &&
               agent("berlin")["status"].contains("nextHeartbeatTime");
      },
      20s));
  EXPECT_EQ(string_at(agent("hashed"), "status/nextHeartbeatTime"),
            expected(hashed, "", "H(0-29) H * * *", "", ""));
  EXPECT_EQ(string_at(agent("spread"), "status/nextHeartbeatTime"),
            expected(spread, "1h", "", "Auto", ""));
  // 09:00 in Berlin is 08:00 or 07:00 UTC, never 09:00.
  const std::string nine_in_berlin = string_at(agent("berlin"), "status/nextHeartbeatTime");
  EXPECT_EQ(nine_in_berlin, expected(berlin, "", "0 9 * * *", "", "Europe/Berlin"));
  EXPECT_THAT(nine_in_berlin, ::testing::AnyOf(::testing::HasSubstr("T08:00:00Z"),
                                               ::testing::HasSubstr("T07:00:00Z")));
  ASSERT_TRUE(wait_until([&] { return condition(agent("mars"), "SpecValid", "False"); }, 20s));
  ASSERT_TRUE(
      wait_until([&] { return condition(agent("overspread"), "SpecValid", "False"); }, 20s));
  // Held in a local: a range-for over a member of agent()'s temporary reads freed memory.
  const json overspread = agent("overspread");
  for (const json& c : overspread["status"]["conditions"]) {
    if (c["type"] == "SpecValid") {
      EXPECT_THAT(c["message"].get<std::string>(),
                  ::testing::HasSubstr("spec.heartbeat.spread \"2h\": longer than the interval"));
    }
  }
  const json mars = agent("mars");
  for (const json& c : mars["status"]["conditions"]) {
    if (c["type"] == "SpecValid") {
      EXPECT_THAT(
          c["message"].get<std::string>(),
          ::testing::HasSubstr("spec.heartbeat.timeZone \"Mars/Olympus\": unknown time zone"));
    }
  }
}

// The operator may not read Secrets: a missing API key shows up as the
// kubelet's CreateContainerConfigError, which fails the run with its words
// and makes the Agent not Ready, while the spec stays valid.
TEST_F(OperatorTest, AMissingApiKeyIsNamedFromTheKubeletNotByReadingTheSecret) {
  start_kubelet([](const json&) { return finishes_with(0.1); });
  start_operator();
  json missing = agent_manifest("mu", {{"prompt", "Heartbeat."}});
  missing["spec"]["model"]["apiKeySecretRef"]["name"] = "nope";
  missing["metadata"]["annotations"] = {{"heartbeat.dev/invoke", "check the key"}};
  create_agent(missing);
  std::string failed;
  ASSERT_TRUE(wait_until(
      [&] {
        for (const json& r : runs_of("mu")) {
          if (r.contains("status") && r["status"].value("reason", "") == "ContainerConfigError") {
            failed = r["metadata"]["name"];
            return r["status"]["phase"] == "Failed";
          }
        }
        return false;
      },
      90s));
  EXPECT_NE(run(failed)["status"]["message"].get<std::string>().find("secret \"nope\" not found"),
            std::string::npos);
  ASSERT_TRUE(wait_until([&] { return condition(agent("mu"), "Ready", "False"); }, 20s));
  const json mu = agent("mu");
  EXPECT_EQ(kstatus_of(mu).status, "Failed");  // Stalled: a person must add the Secret
  EXPECT_TRUE(condition(mu, "Stalled", "True"));
  for (const json& c : mu["status"]["conditions"]) {
    if (c["type"] == "Ready") {
      EXPECT_EQ(c["reason"], "ContainerConfigError");
      EXPECT_NE(c["message"].get<std::string>().find("nope"), std::string::npos);
    }
    if (c["type"] == "SpecValid") {
      EXPECT_EQ(c["status"], "True");
    }
  }
}

// A prompt read from a ConfigMap: a missing one fails a run someone asked
// for, named, and skips scheduled slots without a run or a Job (a
// HeartbeatSkipped Event, status.lastSkippedHeartbeat, Stalled); once the
// ConfigMap appears, runs read it and the skip clears.
TEST_F(OperatorTest, PromptFromAConfigMapIsReadAndAMissingOneIsNamed) {
  start_kubelet([](const json&) { return finishes_with(0.1); });
  start_operator();
  json ref = {{"configMapKeyRef", {{"name", "prompts"}, {"key", "beat"}}}};
  json manifest = agent_manifest("pf", {{"promptFrom", ref}, {"interval", "30s"}});
  manifest["metadata"]["annotations"] = {{"heartbeat.dev/invoke", "first"}};
  create_agent(manifest);
  ASSERT_TRUE(wait_until(
      [&] {
        const auto runs = runs_of("pf");
        return runs.size() == 1 && string_at(runs[0], "status/phase") == "Failed";
      },
      30s));
  const json failed = runs_of("pf")[0];
  EXPECT_EQ(string_at(failed, "status/reason"), "PromptNotFound");
  EXPECT_NE(string_at(failed, "status/message").find("ConfigMap \"prompts\" does not exist"),
            std::string::npos);
  EXPECT_TRUE(condition(failed, "Failed", "True"));
  ASSERT_TRUE(wait_until([&] { return kstatus_of(agent("pf")).status == "Failed"; }, 20s));
  EXPECT_NE(kstatus_of(agent("pf")).message.find("prompts"), std::string::npos);
  // The first slot (30 s after creation) is skipped: no run, no Job.
  ASSERT_TRUE(wait_until(
      [&] {
        return string_at(agent("pf"), "status/lastSkippedHeartbeat/reason") == "PromptNotFound";
      },
      45s))
      << agent("pf")["status"].dump(2);
  EXPECT_EQ(runs_of("pf").size(), 1u);
  EXPECT_EQ(jobs(), 0u);
  EXPECT_EQ(events_with_reason("HeartbeatSkipped"), 1u);
  EXPECT_EQ(kstatus_of(agent("pf")).status, "Failed");
  client_
      ->create(res::kConfigMaps, ns_,
               {{"apiVersion", "v1"},
                {"kind", "ConfigMap"},
                {"metadata", {{"name", "prompts"}}},
                {"data", {{"beat", "Check the queue."}}}})
      .or_throw();
  client_
      ->merge_patch(res::kAgents, ns_, "pf",
                    {{"metadata", {{"annotations", {{"heartbeat.dev/invoke", "second"}}}}}})
      .or_throw();
  ASSERT_TRUE(wait_until(
      [&] {
        for (const json& r : runs_of("pf")) {
          if (string_at(r, "spec/triggerDetail") == "second") {
            return string_at(r, "status/phase") == "Succeeded";
          }
        }
        return false;
      },
      40s));
  // The prompt is there: the skip clears (read again within a minute) and
  // the next slot runs.
  EXPECT_TRUE(wait_until([&] { return kstatus_of(agent("pf")).status == "Current"; }, 70s))
      << agent("pf")["status"].dump(2);
  EXPECT_TRUE(wait_until(
      [&] {
        for (const json& r : runs_of("pf")) {
          if (string_at(r, "spec/invocationSource") == "scheduler" &&
              string_at(r, "status/phase") == "Succeeded") {
            return !agent("pf")["status"].contains("lastSkippedHeartbeat");
          }
        }
        return false;
      },
      45s))
      << agent("pf")["status"].dump(2);
}

// Pod settings a real cluster needs reach the Job, which the real API server
// validates (affinity, tolerations, volumes as a Pod's); a hostPath volume
// is refused naming the field, and the Agent is Stalled until it is fixed.
TEST_F(OperatorTest, PodSettingsReachTheJobAndAHostPathIsRefused) {
  start_kubelet([](const json&) { return finishes_with(0.1); });
  const json runtime = {
      {"imagePullSecrets", json::array({{{"name", "registry"}}})},
      {"nodeSelector", {{"pool", "agents"}}},
      {"tolerations",
       json::array({{{"key", "agents"}, {"operator", "Exists"}, {"effect", "NoSchedule"}}})},
      {"affinity",
       {{"podAntiAffinity",
         {{"preferredDuringSchedulingIgnoredDuringExecution",
           json::array({{{"weight", 50},
                         {"podAffinityTerm",
                          {{"topologyKey", "kubernetes.io/hostname"},
                           {"labelSelector", {{"matchLabels", {{"team", "a"}}}}}}}}})}}}}},
      {"podLabels", {{"team", "a"}}},
      {"podAnnotations", {{"example.com/owner", "team-a"}}},
      {"volumes", json::array({{{"name", "ca"}, {"configMap", {{"name", "corp-ca"}}}}})},
      {"volumeMounts", json::array({{{"name", "ca"}, {"mountPath", "/etc/corp-ca"}}})}};
  create_agent(agent_manifest("ps", {{"prompt", "Heartbeat."}}, {{"runtime", runtime}}));
  json bad = agent_manifest("ps-host", {{"prompt", "Heartbeat."}});
  bad["spec"]["runtime"]["volumes"] =
      json::array({{{"name", "root"}, {"hostPath", {{"path", "/"}}}}});
  create_agent(bad);
  start_operator();
  client_->create(res::kHeartbeatRuns, ns_, manual_run("ps", "ps-1")).or_throw();
  ASSERT_TRUE(wait_until([&] { return run_phase("ps-1", "Succeeded"); }, 30s));
  const json job =
      client_->get(res::kJobs, ns_, string_at(run("ps-1"), "status/jobName")).or_throw();
  const json& pod = job["spec"]["template"]["spec"];
  EXPECT_EQ(pod["nodeSelector"]["pool"], "agents");
  EXPECT_EQ(pod["imagePullSecrets"][0]["name"], "registry");
  EXPECT_EQ(pod["tolerations"][0]["key"], "agents");
  EXPECT_TRUE(pod["affinity"].contains("podAntiAffinity"));
  EXPECT_EQ(job["spec"]["template"]["metadata"]["labels"]["team"], "a");
  EXPECT_EQ(pod["containers"][0]["volumeMounts"].back()["mountPath"], "/etc/corp-ca");

  ASSERT_TRUE(wait_until([&] { return kstatus_of(agent("ps-host")).status == "Failed"; }, 20s));
  EXPECT_NE(kstatus_of(agent("ps-host")).message.find("spec.runtime.volumes[0].hostPath"),
            std::string::npos)
      << kstatus_of(agent("ps-host")).message;
  client_->create(res::kHeartbeatRuns, ns_, manual_run("ps-host", "ps-host-1")).or_throw();
  std::this_thread::sleep_for(3s);
  EXPECT_EQ(string_at(run("ps-host-1"), "status/phase", "Queued"), "Queued");
  EXPECT_EQ(jobs(), 1u);
}

// What Flux (kstatus) and `kubectl wait` conclude from the objects the real
// control plane serves: a brand-new Agent waits for the operator (the CRD's
// status default says generation 0 observed), a paused one is Current and
// Ready, an invalid one is Failed, a spec change is InProgress until acted
// on, and a run can be waited on with condition Complete.
TEST_F(OperatorTest, GitOpsToolsReadAgentsAndRunsAsKStatusSays) {
  start_kubelet([](const json&) { return finishes_with(0.2); });
  create_agent(agent_manifest("ks-ok", {{"prompt", "Heartbeat."}}));
  create_agent(agent_manifest("ks-paused", {{"prompt", "Heartbeat."}, {"interval", "30s"}},
                              {{"paused", true}}));
  create_agent(agent_manifest(
      "ks-bad", {{"prompt", "Heartbeat."}, {"interval", "30s"}, {"schedule", "* * * * *"}}));
  for (const char* name : {"ks-ok", "ks-paused", "ks-bad"}) {
    const json fresh = agent(name);
    EXPECT_EQ(fresh["status"]["observedGeneration"], 0) << name;
    EXPECT_EQ(kstatus_of(fresh).status, "InProgress") << name;
  }
  start_operator();
  ASSERT_TRUE(wait_until([&] { return kstatus_of(agent("ks-ok")).status == "Current"; }, 20s));
  EXPECT_TRUE(condition(agent("ks-ok"), "Ready", "True"));
  ASSERT_TRUE(wait_until([&] { return kstatus_of(agent("ks-bad")).status == "Failed"; }, 20s));
  EXPECT_TRUE(condition(agent("ks-bad"), "Ready", "False"));
  ASSERT_TRUE(wait_until([&] { return kstatus_of(agent("ks-paused")).status == "Current"; }, 20s));
  const json paused = agent("ks-paused");
  EXPECT_TRUE(condition(paused, "Ready", "True"));
  EXPECT_TRUE(condition(paused, "Paused", "True"));
  EXPECT_EQ(paused["status"]["phase"], "Paused");

  client_->merge_patch(res::kAgents, ns_, "ks-ok", {{"spec", {{"paused", true}}}}).or_throw();
  ASSERT_TRUE(wait_until(
      [&] {
        const json a = agent("ks-ok");
        return a["metadata"]["generation"] == 2 && kstatus_of(a).status == "Current";
      },
      20s));
  EXPECT_EQ(agent("ks-ok")["status"]["observedGeneration"], 2);
  client_->merge_patch(res::kAgents, ns_, "ks-ok", {{"spec", {{"paused", false}}}}).or_throw();

  client_->create(res::kHeartbeatRuns, ns_, manual_run("ks-ok", "ks-ok-1")).or_throw();
  ASSERT_TRUE(wait_until([&] { return condition(run("ks-ok-1"), "Complete", "True"); }, 30s));
  const json done = run("ks-ok-1");
  EXPECT_EQ(done["status"]["phase"], "Succeeded");
  EXPECT_TRUE(condition(done, "Running", "False"));
  EXPECT_TRUE(condition(done, "Finished", "True"));
  EXPECT_EQ(done["status"]["observedGeneration"], 1);
  EXPECT_EQ(kstatus_of(done).status, "Current");
  // Argo CD's health checks (the chart's Lua) on the same served objects.
  EXPECT_EQ(argocd_health({{"Agent", "ks-paused", agent("ks-paused"), "Suspended"},
                           {"Agent", "ks-bad", agent("ks-bad"), "Degraded"},
                           {"Agent", "ks-ok", agent("ks-ok"), "Healthy"},
                           {"HeartbeatRun", "ks-ok-1", done, "Healthy"}}),
            0);
}

TEST_F(OperatorTest, AnnotationAndWakeupCreateRunsAndCoalesce) {
  start_kubelet([](const json&) {
    PodScript s = finishes_with(0.1);
    s.run_for = 6s;
    return s;
  });
  create_agent(agent_manifest("nu", {{"prompt", "Heartbeat."}}));
  start_operator();
  client_
      ->merge_patch(res::kAgents, ns_, "nu",
                    {{"metadata", {{"annotations", {{"heartbeat.dev/invoke", "look now"}}}}}})
      .or_throw();
  ASSERT_TRUE(wait_until([&] { return runs_of("nu").size() == 1; }, 20s));
  EXPECT_EQ(string_at(runs_of("nu")[0], "spec/triggerDetail"), "look now");
  // GitOps-safe: the annotation stays, the value acted on is recorded, and
  // applying the same value again (a Git sync) makes no second run.
  ASSERT_TRUE(wait_until(
      [&] { return string_at(agent("nu"), "status/lastInvoke/value") == "look now"; }, 10s));
  EXPECT_EQ(agent("nu")["metadata"]["annotations"]["heartbeat.dev/invoke"], "look now");
  client_
      ->merge_patch(
          res::kAgents, ns_, "nu",
          {{"metadata", {{"annotations", {{"sync", "1"}, {"heartbeat.dev/invoke", "look now"}}}}}})
      .or_throw();
  const std::string path = "/api/v1/namespaces/" + ns_ + "/agents/nu/wakeup";
  const std::string token = "s3cret-token";
  // No token and a wrong one answer as a missing agent does (404, the same body).
  EXPECT_EQ(operator_->post(path, "{}", "").status, 404);
  EXPECT_EQ(operator_->post(path, "{}", "wrong").status, 404);
  EXPECT_EQ(operator_->post(path, "{not json", token).status, 400);
  EXPECT_EQ(operator_->post(path, "{}", token, {{"Idempotency-Key", std::string(129, 'k')}}).status,
            400);
  EXPECT_EQ(
      operator_->post("/api/v1/namespaces/" + ns_ + "/agents/ghost/wakeup", "{}", token).status,
      404);
  EXPECT_EQ(runs_of("nu").size(), 1u);  // nothing created by the bad calls
  // Callback runs queue behind the annotation's run (it runs for 6 s).
  const std::string manual = runs_of("nu")[0]["metadata"]["name"];
  ASSERT_TRUE(wait_until([&] { return run_phase(manual, "Running"); }, 20s));
  // Metadata past its bounds is refused, naming the limit; nothing is made.
  http::Response too_many = operator_->post(path,
                                            json{{"metadata",
                                                  json(std::map<std::string, std::string>{
                                                      {"a", "1"},
                                                      {"b", "2"},
                                                      {"c", "3"},
                                                      {"d", "4"},
                                                      {"e", "5"},
                                                      {"f", "6"},
                                                      {"g", "7"},
                                                      {"h", "8"},
                                                      {"i", "9"},
                                                      {"j", "10"},
                                                      {"k", "11"},
                                                      {"l", "12"},
                                                      {"m", "13"},
                                                      {"n", "14"},
                                                      {"o", "15"},
                                                      {"p", "16"},
                                                      {"q", "17"}})}}
                                                .dump(),
                                            token);
  EXPECT_EQ(too_many.status, 400);
  EXPECT_NE(too_many.body.find("at most 16 entries"), std::string::npos) << too_many.body;
  EXPECT_EQ(runs_of("nu").size(), 1u);
  http::Response first = operator_->post(
      path, R"({"reason":"webhook fired","metadata":{"taskId":"T-42","priority":"high"}})", token,
      {{"Idempotency-Key", "delivery-1"}});
  EXPECT_EQ(first.status, 201) << first.body;
  // The reason and metadata land on the run (the API server kept them).
  const json made = run(json::parse(first.body)["run"]);
  EXPECT_EQ(made["spec"]["triggerDetail"], "webhook fired");
  EXPECT_EQ(made["spec"]["metadata"], json({{"taskId", "T-42"}, {"priority", "high"}}));
  // A retried delivery: the same run, not another.
  http::Response retried = operator_->post(path, R"({"reason":"webhook fired"})", token,
                                           {{"Idempotency-Key", "delivery-1"}});
  EXPECT_EQ(retried.status, 200) << retried.body;
  EXPECT_EQ(json::parse(retried.body)["run"], json::parse(first.body)["run"]);
  EXPECT_EQ(json::parse(retried.body)["created"], false);
  // A second wakeup while the first is queued folds into it in the reconcile.
  http::Response second = operator_->post(path, R"({"reason":"again"})", token);
  EXPECT_EQ(second.status, 201) << second.body;
  const std::string cb = json::parse(first.body)["run"];
  const std::string folded = json::parse(second.body)["run"];
  ASSERT_TRUE(wait_until([&] { return run_phase(folded, "Cancelled"); }, 20s));
  EXPECT_EQ(string_at(run(folded), "status/reason"), "Coalesced");
  EXPECT_EQ(run(folded)["status"]["costRecorded"], true);
  ASSERT_TRUE(wait_until([&] { return run_phase(cb, "Succeeded"); }, 30s));
  EXPECT_EQ(run(cb)["spec"]["invocationSource"], "callback");
  EXPECT_EQ(run(cb)["status"]["coalesced"]["count"], 1);
  EXPECT_EQ(run(cb)["status"]["coalesced"]["runs"][0]["reason"], "again");
  EXPECT_EQ(runs_of("nu").size(), 3u);
  EXPECT_EQ(operator_->metric("heartbeat_runs_coalesced_total"), 1);
  // A standby replica acts on nothing: 503 with Retry-After, no run.
  const auto standby = start_second_operator();
  http::Response refused = standby->post(path, "{}", token);
  EXPECT_EQ(refused.status, 503) << refused.body;
  EXPECT_EQ(refused.header("retry-after"), "2");
  EXPECT_EQ(runs_of("nu").size(), 3u);
}

long rss_kib(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  }
  return -1;
}

// The issue's attack from the pod network: clients on every port hold a
// request head open with a promised body that never comes, and one declares
// a 1 GiB body. The operator keeps answering, reconciling and its memory.
TEST_F(OperatorTest, SlowAndLargeClientsDoNotStallTheOperator) {
  constexpr int kSlowClientsPerPort = 60;
  constexpr long kBigBodyGrowthKibMax = 64 * 1024;  // the issue's bound
  start_kubelet([](const json&) { return finishes_with(0.1); });
  start_operator();
  ASSERT_TRUE(wait_until([&] { return operator_->ready(); }, 30s));
  std::vector<std::unique_ptr<test_support::RawClient>> slow;
  for (int port : {operator_->health_port(), operator_->metrics_port(), operator_->wakeup_port()}) {
    for (int i = 0; i < kSlowClientsPerPort; ++i) {
      slow.push_back(std::make_unique<test_support::RawClient>(port));
      // A head never finished; on the wakeup port, a body promised and never sent.
      slow.back()->send(port == operator_->wakeup_port()
                            ? "POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n"
                            : "GET /healthz HTTP/1.1\r\nHost: x\r\n");
    }
  }
  const long rss_before = rss_kib(operator_->pid());
  test_support::RawClient big(operator_->wakeup_port());
  big.send("POST /api/v1/namespaces/" + ns_ +
           "/agents/a/wakeup HTTP/1.1\r\nHost: x\r\nContent-Length: 1073741824\r\n\r\n");
  big.send(std::string(4 << 20, 'x'));  // the server may have closed already
  EXPECT_EQ(test_support::status_of(big.read_all()), 413);
  // Measured around the body alone: a reconcile's own allocations (larger
  // under the sanitizers) are not the attack's.
  const long growth = rss_kib(operator_->pid()) - rss_before;
  std::printf("[ edge ] RSS growth after a declared 1 GiB body with %zu slow clients: %ld KiB\n",
              slow.size(), growth);
  EXPECT_LT(growth, kBigBodyGrowthKibMax);
  EXPECT_EQ(operator_->get(operator_->health_port(), "/healthz"), "ok");
  ASSERT_TRUE(invoke_new_agent_until_succeeded("sc", "while under attack", 60s));
  EXPECT_EQ(test_support::status_of(slow.front()->read_all()), 408);
  EXPECT_EQ(test_support::status_of(slow.back()->read_all()), 408);
}

// A leader frozen mid-term (kill -STOP): the standby takes over after the
// lease duration of not seeing it renew, and the old leader, thawed, fences
// itself (exit 3) before a single write: never two actors, no duplicate run.
TEST_F(OperatorTest, AFrozenLeaderIsReplacedAndFencesItselfWhenThawed) {
  start_kubelet([](const json&) { return finishes_with(0.1); });
  start_operator();
  const auto standby = start_second_operator();
  const std::string first = lease_holder();
  ASSERT_FALSE(first.empty());
  ::kill(operator_->pid(), SIGSTOP);
  const auto frozen_at = std::chrono::steady_clock::now();
  ASSERT_TRUE(wait_until([&] { return lease_holder() != first; }, 40s));
  std::printf("[ leader ] failover after kill -STOP: %.1f s (lease 15 s + retry 2 s)\n",
              std::chrono::duration<double>(std::chrono::steady_clock::now() - frozen_at).count());
  ASSERT_TRUE(invoke_new_agent_until_succeeded("ha", "after failover", 30s));
  ::kill(operator_->pid(), SIGCONT);
  ASSERT_TRUE(wait_until([&] { return !operator_->alive(); }, 10s));
  EXPECT_EQ(operator_->exit_status(), 3);
  EXPECT_NE(tail_of_file(operator_->log_path(), 4096).find("event=leader_lost"), std::string::npos);
  EXPECT_EQ(runs_of("ha").size(), 1u);
  EXPECT_TRUE(standby->alive());
}

// A leader whose API server stops answering (connections hang, nothing is
// refused) fences itself at the renew deadline while its calls still hang:
// it exits 3 before the standby may take over, and the standby then leads.
TEST_F(OperatorTest, ALeaderWhoseApiCallsHangFencesItself) {
  std::ifstream in(env("KUBECONFIG", ""));
  std::string kubeconfig((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string marker = "server: https://127.0.0.1:";
  const size_t at = kubeconfig.find(marker);
  ASSERT_NE(at, std::string::npos);
  const size_t port_at = at + marker.size();
  const size_t port_end = kubeconfig.find_first_not_of("0123456789", port_at);
  test_support::TcpProxy proxy(std::stoi(kubeconfig.substr(port_at, port_end - port_at)));
  kubeconfig.replace(port_at, port_end - port_at, std::to_string(proxy.port()));
  const std::string path = env("HB_BUILD_DIR", ".") + "/Testing/kubeconfig-" + ns_;
  std::ofstream(path) << kubeconfig;
  start_operator({"--kubeconfig=" + path});
  const auto standby = start_second_operator();
  const std::string first = lease_holder();
  proxy.pause();
  const auto paused_at = std::chrono::steady_clock::now();
  auto since_pause = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - paused_at).count();
  };
  ASSERT_TRUE(wait_until([&] { return !operator_->alive(); }, 30s));
  const double fenced = since_pause();
  EXPECT_EQ(operator_->exit_status(), 3);
  EXPECT_EQ(lease_holder(), first);  // fenced before anyone may take over
  ASSERT_TRUE(wait_until([&] { return lease_holder() != first; }, 30s));
  std::printf(
      "[ leader ] API hung: leader fenced (exit 3) after %.1f s, standby led after %.1f s\n",
      fenced, since_pause());
  EXPECT_EQ(proxy.forwarded_after_pause(), 0);
  EXPECT_TRUE(standby->alive());
}

// A healthy leader whose node clock runs 40 s behind writes renewTimes that
// look expired to everyone else; judged by observed time, it keeps the Lease.
TEST_F(OperatorTest, ALeaderWithASkewedClockIsNotDeposed) {
  start_operator({"--testing-clock-offset-seconds=-40"});
  const auto other = start_second_operator({"--testing-clock-offset-seconds=40"});
  const std::string first = lease_holder();
  // Longer than the lease duration plus a retry: a wall-clock judge would
  // have taken it at once (renewTime 40 s old on arrival).
  std::this_thread::sleep_for(20s);
  EXPECT_EQ(lease_holder(), first);
  EXPECT_TRUE(operator_->alive());
  EXPECT_TRUE(other->alive());
}

// A renewal that finds the Lease held by another identity (written over by
// hand, or by a replica that judged it expired) stops acting at once, not at
// the renew deadline.
TEST_F(OperatorTest, ALeaderThatFindsAnotherHolderStopsAtOnce) {
  start_operator();
  // The leader renews every 2 s: retry a replace that lost to a renewal.
  ASSERT_TRUE(wait_until(
      [&] {
        json lease = client_->get(res::kLeases, ns_, "op").or_throw();
        lease["spec"]["holderIdentity"] = "intruder";
        try {
          client_->replace(res::kLeases, ns_, "op", lease).or_throw();
          return true;
        } catch (const kube::ApiError&) {
          return false;
        }
      },
      10s));
  ASSERT_TRUE(wait_until([&] { return !operator_->alive(); }, 30s));
  EXPECT_EQ(operator_->exit_status(), 3);
  EXPECT_NE(tail_of_file(operator_->log_path(), 4096)
                .find("event=leader_lost reason=lease_held_by_another"),
            std::string::npos);
  EXPECT_EQ(lease_holder(), "intruder");  // it never took the Lease back
}

TEST_F(OperatorTest, SigtermShutsDownCleanly) {
  start_operator({"--leader-elect=true"});
  operator_->kill(SIGTERM);
  EXPECT_EQ(operator_->exit_status(), 0);
}

}  // namespace
}  // namespace hb::testing
