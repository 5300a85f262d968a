// End to end, as a user meets it: the Helm chart's RBAC, the operator binary,
// Jobs run by kube-controller-manager, Pods run by the local pod executor as
// real heartbeat-runner processes, and the scripted stand-in model over HTTP.
// Each test has its own namespace and its own operator(s) for that namespace.
#include <gtest/gtest.h>

#include <algorithm>
#include <csignal>
#include <set>

#include "api/contract_limits.h"
#include "api/utf8.h"
#include "controllers/model/json_util.h"
#include "controllers/policy/concurrency.h"
#include "controllers/schedule/utc_time.h"
#include "tests/e2e/suite/e2e_fixture.h"

namespace hb::testing {
namespace {

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
  // Run logs: the ends of the real runner's stdout (its JSON-lines
  // transcript) and stderr (its log), and where the whole log is.
  const std::string out = string_at(done, "status/stdoutExcerpt");
  EXPECT_NE(out.find("\"event\":"), std::string::npos) << out;
  EXPECT_LE(api::utf8_length(out), api::kLogExcerptCharsMax);
  EXPECT_NE(string_at(done, "status/stderrExcerpt").find("run=" + name), std::string::npos)
      << done["status"].dump(2);
  EXPECT_EQ(string_at(done, "status/log/ref"),
            "pod/" + ns_ + "/" + string_at(done, "status/podName") + "/runner");
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
  // A run is waited on like a Job (kubectl fails, and so does this, on timeout).
  const std::string waited =
      kubectl("wait --for=condition=Complete --timeout=60s hbr/trig-by-kubectl");
  EXPECT_NE(waited.find("condition met"), std::string::npos) << waited;
  EXPECT_EQ(string_at(run("trig-by-kubectl"), "status/phase"), "Succeeded");
  EXPECT_NE(kubectl("wait --for=condition=Ready --timeout=20s agent/trig").find("condition met"),
            std::string::npos);

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
  EXPECT_EQ(op.post(path, "{}", "not-the-token").status, 404);  // as a missing agent
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
  // The pause holds scheduled heartbeats only: a manual run starts in it.
  kubectl_create_run("pauser", "pauser-2");
  ASSERT_TRUE(wait_phase("pauser-2", "Succeeded", 60s)) << run("pauser-2").dump(2);
  EXPECT_EQ(runs_of("pauser").size(), 2u);
}

// Idle backoff with the real runner: the stand-in model answers just
// HEARTBEAT_OK without a tool call, the runner reports no action, the
// operator judges the run idle and stretches the interval.
TEST_F(E2eTest, AnIdleAgentsIntervalDoubles) {
  const json created = create_agent(agent_manifest_e2e(
      "idler", "Anything new? Answer HEARTBEAT_OK if not. [[idle]]",
      {{"heartbeat",
        {{"interval", "30s"}, {"idleBackoff", {{"after", 1}, {"maxInterval", "1m"}}}}}}));
  const auto created_at = *controllers::time_at(created, "metadata/creationTimestamp");
  wait_ready(start_operator());
  ASSERT_TRUE(wait_until([&] { return runs_of("idler").size() == 1; }, 60s));
  const std::string name = string_at(runs_of("idler").front(), "metadata/name");
  ASSERT_TRUE(wait_phase(name, "Succeeded", 60s)) << run(name).dump(2);
  const json done = run(name);
  EXPECT_EQ(done["status"]["output"], "HEARTBEAT_OK");
  EXPECT_EQ(done["status"]["usage"]["toolCalls"], 0);
  EXPECT_EQ(done["status"]["idle"], true);
  ASSERT_TRUE(wait_until([&] { return agent("idler")["status"]["idleStreak"] == 1; }, 15s));
  const json a = agent("idler");
  EXPECT_EQ(a["status"]["effectiveInterval"], "1m");
  EXPECT_EQ(string_at(a, "status/nextHeartbeatTime"),
            schedule::format_rfc3339(created_at + std::chrono::seconds(90)));
  const std::string table = kubectl("get hbr " + name + " -o wide");
  EXPECT_NE(table.find("IDLE"), std::string::npos) << table;
  EXPECT_NE(last_line(table).find("true"), std::string::npos) << table;
  // The 60 s slot passes without a run.
  std::this_thread::sleep_until(created_at + std::chrono::seconds(70));
  EXPECT_EQ(runs_of("idler").size(), 1u);
}

// --max-concurrent-runs with the real runner: five agents asked at once, a
// cap of 2; never more than two run, the rest wait ConcurrencyLimited, all
// five finish.
TEST_F(E2eTest, ACapOfTwoRunsFiveAgentsTwoAtATime) {
  const std::vector<std::string> names = {"cap-a", "cap-b", "cap-c", "cap-d", "cap-e"};
  for (const std::string& name : names) {
    create_agent(agent_manifest_e2e(name, "Work for a while. [[sleep 4]]"));
  }
  wait_ready(start_operator({"--max-concurrent-runs=2"}));
  for (const std::string& name : names) kubectl_create_run(name, name + "-1");
  size_t most_running = 0;
  std::set<std::string> limited;
  const bool all_done = wait_until(
      [&] {
        size_t running = 0, succeeded = 0;
        // One snapshot: five reads one after another can see a run still
        // Running and the run started after it finished, both at once.
        for (const json& r : runs()) {
          const std::string name = string_at(r, "spec/agentRef/name");
          if (std::find(names.begin(), names.end(), name) == names.end()) continue;
          const std::string phase = string_at(r, "status/phase");
          running += phase == "Running";
          succeeded += phase == "Succeeded";
          if (string_at(r, "status/reason") == controllers::kReasonConcurrencyLimited) {
            limited.insert(name);
          }
        }
        most_running = std::max(most_running, running);
        return succeeded == names.size();
      },
      180s, 50ms);
  EXPECT_TRUE(all_done);
  EXPECT_LE(most_running, 2u);
  EXPECT_GE(limited.size(), 1u) << "the runs beyond the cap said why they waited";
  const std::string table = kubectl("get hbr -o wide");
  EXPECT_EQ(table.find("ConcurrencyLimited"), std::string::npos) << "over once they ran\n" << table;
}

// @mentions with the real runner: each agent's final answer mentions the
// other; the chain runs ping, pong, ping, pong and stops at depth 3.
TEST_F(E2eTest, AMentionWakesAnotherAgentAndAPingPongStops) {
  create_agent(agent_manifest_e2e("ping", "Play. [[say @pong your turn]]",
                                  {{"heartbeat", {{"wakeOnMention", true}}}}));
  create_agent(agent_manifest_e2e("pong", "Play. [[say @ping your turn]]",
                                  {{"heartbeat", {{"mentionableBy", {"ping"}}}}}));
  wait_ready(start_operator());
  kubectl_create_run("ping", "ping-1");
  auto finished = [&](const std::string& agent_name) {
    size_t n = 0;
    for (const json& r : runs_of(agent_name)) n += string_at(r, "status/phase") == "Succeeded";
    return n;
  };
  ASSERT_TRUE(wait_until([&] { return finished("ping") == 2 && finished("pong") == 2; }, 180s))
      << runs_of("ping").size() << " ping run(s), " << runs_of("pong").size() << " pong run(s)";
  EXPECT_EQ(string_at(run("ping-1"), "status/output"), "@pong your turn");
  std::this_thread::sleep_for(5s);  // the last pong run's mention is not followed
  EXPECT_EQ(runs_of("ping").size(), 2u);
  EXPECT_EQ(runs_of("pong").size(), 2u);
  for (const json& r : runs_of("pong")) {
    EXPECT_EQ(string_at(r, "spec/invocationSource"), "callback");
    EXPECT_EQ(string_at(r, "spec/triggerDetail").rfind("mentioned by ping in run ", 0), 0u)
        << r.dump();
  }
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

  // resume: Manual (the default) waits for a person. The annotation
  // releases the stop (one Event) but this month's spend still stands;
  // a raised budget lets the queued run go.
  EXPECT_NE(kubectl("get hba spender -o "
                    "jsonpath='{.status.conditions[?(@.type==\"BudgetExceeded\")].reason}'")
                .find("AwaitingApproval"),
            std::string::npos);
  kubectl("annotate hba spender heartbeat.dev/resume=approved-by-ana");
  ASSERT_TRUE(wait_until(
      [&] {
        return string_at(agent("spender"), "status/budgetHold/releasedBy") == "ResumeAnnotation";
      },
      20s))
      << agent("spender")["status"].dump(2);
  EXPECT_NE(kubectl("get events --field-selector reason=BudgetResumed").find("spender"),
            std::string::npos);
  EXPECT_EQ(phase_of("spender-2"), "Queued");
  kubectl("patch hba spender --type=merge -p '{\"spec\":{\"budget\":{\"monthlyCents\":100}}}'");
  ASSERT_TRUE(wait_phase("spender-2", "Succeeded", 60s)) << run("spender-2").dump(2);
}

// A team budget (HeartbeatPolicy) with the real runner: two agents of the
// team spend 1 cent each; together they reach the 2-cent team budget and
// both stop at once, naming the policy; `kubectl get hbp` shows the spend;
// a raised team budget lets a queued run go.
TEST_F(E2eTest, APolicyBudgetStopsTwoAgentsAtOnce) {
  for (const char* name : {"team-1", "team-2"}) create_agent(one_cent_agent(name, "blue"));
  create_team_policy("blue-team", "blue", 2);
  wait_ready(start_operator());
  kubectl_create_run("team-1", "team-1-1");
  ASSERT_TRUE(wait_phase("team-1-1", "Succeeded", 60s)) << run("team-1-1").dump(2);
  kubectl_create_run("team-2", "team-2-1");
  ASSERT_TRUE(wait_phase("team-2-1", "Succeeded", 60s)) << run("team-2-1").dump(2);
  EXPECT_DOUBLE_EQ(run_cost("team-1-1"), 1.0) << run("team-1-1").dump(2);
  EXPECT_DOUBLE_EQ(run_cost("team-2-1"), 1.0) << run("team-2-1").dump(2);
  for (const char* name : {"team-1", "team-2"}) {
    ASSERT_TRUE(wait_until(
        [&] {
          return kubectl(
                     std::string("get hba ") + name +
                     " -o jsonpath='{.status.conditions[?(@.type==\"BudgetExceeded\")].reason}'")
                     .find("PolicyBudgetExceeded") != std::string::npos;
        },
        30s))
        << agent(name)["status"].dump(2);
  }
  kubectl_create_run("team-1", "team-1-2");
  std::this_thread::sleep_for(5s);
  EXPECT_EQ(phase_of("team-1-2"), "Queued");
  EXPECT_NE(string_at(run("team-1-2"), "status/message").find("HeartbeatPolicy blue-team"),
            std::string::npos)
      << run("team-1-2")["status"].dump(2);
  ASSERT_TRUE(wait_until(
      [&] {
        const json policy = client_->get(res::kHeartbeatPolicies, ns_, "blue-team").or_throw();
        return controllers::number_at(policy, "status/spend/cents") == 2.0 &&
               controllers::int_at(policy, "status/agents") == 2;
      },
      20s))
      << kubectl("get hbp blue-team -o yaml");
  const std::string table = kubectl("get hbp");
  EXPECT_NE(table.find("blue-team"), std::string::npos) << table;
  kubectl("patch hbp blue-team --type=merge -p '{\"spec\":{\"budget\":{\"monthlyCents\":100}}}'");
  ASSERT_TRUE(wait_phase("team-1-2", "Succeeded", 60s)) << run("team-1-2").dump(2);
}

// Quota holds with the real runner: the stand-in model answers one agent
// with a 429 that resets in an hour; the runner ends the run at once
// (provider_quota, no retry), and the operator holds the other agent on the
// same key Secret too, while an agent on another key runs on.
TEST_F(E2eTest, AQuota429HoldsTwoAgentsThatShareAKey) {
  create_agent(agent_manifest_e2e("walled", "Work. [[quota 3600]]"));
  create_agent(agent_manifest_e2e("sibling", "Work."));
  json other = agent_manifest_e2e("stranger", "Work.");
  other["spec"]["model"]["apiKeySecretRef"]["key"] = "token";
  create_agent(other);
  wait_ready(start_operator());
  kubectl_create_run("walled", "walled-1");
  ASSERT_TRUE(wait_phase("walled-1", "Failed", 60s)) << run("walled-1").dump(2);
  const json walled = run("walled-1");
  EXPECT_EQ(string_at(walled, "status/stopReason"), "provider_quota");
  const std::optional<std::chrono::system_clock::time_point> reset =
      controllers::time_at(walled, "status/providerResetAt");
  ASSERT_TRUE(reset.has_value()) << walled["status"].dump(2);
  EXPECT_GT(*reset, std::chrono::system_clock::now() + std::chrono::minutes(50));
  ASSERT_TRUE(wait_until(
      [&] {
        return kubectl(
                   "get hba sibling -o "
                   "jsonpath='{.status.conditions[?(@.type==\"ProviderThrottled\")].status}'")
                   .find("True") != std::string::npos;
      },
      30s))
      << agent("sibling")["status"].dump(2);
  kubectl_create_run("sibling", "sibling-1");
  kubectl_create_run("stranger", "stranger-1");
  ASSERT_TRUE(wait_phase("stranger-1", "Succeeded", 60s)) << run("stranger-1").dump(2);
  EXPECT_EQ(phase_of("sibling-1"), "Queued") << run("sibling-1")["status"].dump(2);
  const std::string events = kubectl("get events --field-selector reason=ProviderThrottled");
  EXPECT_NE(events.find("sibling"), std::string::npos) << events;
}

TEST_F(E2eTest, CancelStopsTheRunner) {
  create_agent(agent_manifest_e2e("canceller", "Work long. [[sleep 120]]",
                                  {{"runtime", {{"graceSeconds", 5}}}}));
  wait_ready(start_operator());
  kubectl_create_run("canceller", "canceller-1");
  ASSERT_TRUE(wait_until([&] { return runner_pid(ns_, "canceller-1") > 0; }, 60s));
  ASSERT_TRUE(wait_phase("canceller-1", "Running", 10s));
  kubectl("patch hbr canceller-1 --type=merge -p '{\"spec\":{\"cancel\":true}}'");
  kubectl("wait --for=condition=Failed --timeout=60s hbr/canceller-1");
  ASSERT_TRUE(wait_phase("canceller-1", "Cancelled", 5s)) << run("canceller-1").dump(2);
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
    const json leases = client_->list_all(res::kLeases, ns_).or_throw();
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
