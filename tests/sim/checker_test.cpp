// The invariant checker itself: each promise it guards, broken on purpose
// through the simulated API server, is reported (a checker that cannot fail
// would make every simulated seed pass).
#include "tests/sim/checker.h"

#include <gtest/gtest.h>

#include <map>

#include "api/rfc3339.h"
#include "controllers/model/names.h"
#include "controllers/run/run_after_job.h"
#include "controllers/run/run_record.h"

namespace hb::sim {
namespace {

class CheckerTest : public ::testing::Test {
 protected:
  CheckerTest()
      : server_([this] { return now_; }),
        checker_(server_, {std::chrono::seconds(60), std::chrono::seconds(120),
                           [this](const std::string& run) -> std::optional<TimePoint> {
                             auto it = beats_.find(run);
                             if (it == beats_.end()) return std::nullopt;
                             return it->second;
                           },
                           /*max_concurrent_runs=*/2}) {
    server_.set_observer(
        [this](Actor a, const std::string& r, const std::optional<Json>& before,
               const std::optional<Json>& after) { checker_.on_write(a, r, before, after, now_); });
    server_.create(Actor::kUser, "agents", "ns",
                   {{"metadata", {{"name", "a"}}},
                    {"spec",
                     {{"budget", {{"monthlyCents", 100}}},
                      {"runtime", {{"timeoutSeconds", 60}, {"graceSeconds", 5}}}}}});
  }

  Json scheduler_run(const std::string& name, const std::string& slot) {
    return {{"metadata", {{"name", name}}},
            {"spec",
             {{"agentRef", {{"name", "a"}}},
              {"invocationSource", "scheduler"},
              {"scheduledTime", slot}}}};
  }
  void set_agent_status(const Json& status) {
    server_.merge_patch(Actor::kOperator, "agents", "ns", "a", {{"status", status}}, true);
  }
  // February's budget stop, still waiting for a person (no resume value then).
  void hold_february_stop() {
    set_agent_status({{"budgetHold",
                       {{"period", "2026-02"},
                        {"budgetCents", 100},
                        {"since", "2026-02-27T10:00:00Z"},
                        {"resumeValueHash", ""}}}});
  }
  void set_run_status(const std::string& run, const Json& status) {
    server_.merge_patch(Actor::kOperator, "heartbeatruns", "ns", run, {{"status", status}}, true);
  }
  // The operator starts a run by creating its Job (owned by the run).
  // The run's Job as the operator makes it: controlled by the run, its
  // template stamped with the policies the run's annotation names.
  void start(const std::string& run) {
    const Json* stored = server_.peek("heartbeatruns", "ns", run);
    const std::string uid = stored ? controllers::string_at(*stored, "metadata/uid") : "";
    const std::string policies =
        stored ? controllers::policies_annotation(
                     controllers::stamped_policies(*stored).value_or(std::vector<std::string>{}))
               : "";
    Json job = {
        {"metadata",
         {{"name", run},
          {"ownerReferences",
           {{{"kind", "HeartbeatRun"}, {"name", run}, {"uid", uid}, {"controller", true}}}}}}};
    job["spec"]["template"]["metadata"]["annotations"][controllers::kAnnotationPolicies] = policies;
    server_.create(Actor::kOperator, "jobs", "ns", job);
  }
  // A Job made before its run (a dispatch path that writes the Job first):
  // named for the run, which it names in an annotation, owned by the Agent.
  void made_before_its_run(const std::string& run) {
    const std::string agent =
        controllers::string_at(*server_.peek("agents", "ns", "a"), "metadata/uid");
    server_.create(Actor::kOperator, "jobs", "ns",
                   {{"metadata",
                     {{"name", run},
                      {"annotations", {{controllers::kAnnotationRunName, run}}},
                      {"ownerReferences", {{{"kind", "Agent"}, {"name", "a"}, {"uid", agent}}}}}}});
  }
  // A Job made first (no owner yet), carrying its run `run` of Agent
  // `agent` as the operator writes it, its template stamped with
  // `policies`: the run starts now and is made later.
  void start_job_first(const std::string& run, const std::string& agent = "a",
                       const std::string& policies = "") {
    const std::string uid =
        controllers::string_at(*server_.peek("agents", "ns", agent), "metadata/uid");
    const Json carried = {
        {"metadata",
         {{"name", run},
          {"namespace", "ns"},
          {"annotations", {{controllers::kAnnotationAgentUid, uid}}}}},
        {"spec", {{"agentRef", {{"name", agent}}}, {"invocationSource", "manual"}}}};
    Json job = {{"metadata",
                 {{"name", controllers::job_name_for_run(run)},
                  {"annotations",
                   {{controllers::kAnnotationRunToMake, *controllers::run_to_make_text(carried)},
                    {controllers::kAnnotationAgentName, agent},
                    {controllers::kAnnotationAgentUid, uid}}}}}};
    job["spec"]["template"]["metadata"]["annotations"][controllers::kAnnotationPolicies] = policies;
    server_.create(Actor::kOperator, "jobs", "ns", job);
  }
  // The run a Job made first carries, made as the operator makes it.
  void make_carried_run(const std::string& run) {
    const Json* job = server_.peek("jobs", "ns", controllers::job_name_for_run(run));
    server_.create(Actor::kOperator, "heartbeatruns", "ns", *controllers::run_carried_by(*job));
  }
  Json finished(double cents) {
    return {{"phase", "Succeeded"}, {"costRecorded", true}, {"usage", {{"costCents", cents}}}};
  }

  TimePoint now_ = *api::parse_rfc3339("2026-03-10T10:00:00Z");
  std::map<std::string, TimePoint> beats_;  // the node's record: "ns/run" -> its last beat
  ApiServer server_;
  Checker checker_;
};

TEST_F(CheckerTest, AWellBehavedOperatorHasNoViolations) {
  server_.create(Actor::kOperator, "heartbeatruns", "ns",
                 scheduler_run("r1", "2026-03-10T10:00:00Z"));
  set_run_status("r1", {{"phase", "Running"}, {"startedAt", "2026-03-10T10:00:00Z"}});
  set_agent_status({{"spend", {{"period", "2026-03"}, {"cents", 2.5}}}});
  set_run_status("r1", finished(2.5));
  checker_.check_state(now_, now_ - std::chrono::hours(1));
  checker_.check_settled();
  EXPECT_TRUE(checker_.violations().empty()) << checker_.violations().front();
}

TEST_F(CheckerTest, AThirdRunStartedUnderACapOfTwoIsCaught) {
  for (const char* run : {"r1", "r2", "r3", "r4"}) {
    server_.create(Actor::kOperator, "heartbeatruns", "ns",
                   scheduler_run(run, std::string("2026-03-10T10:0") + run[1] + ":00Z"));
  }
  start("r1");
  start("r2");
  set_run_status("r1", finished(1));  // a finished run's Job holds no place
  start("r3");
  EXPECT_TRUE(checker_.violations().empty()) << checker_.violations().front();
  start("r4");
  ASSERT_EQ(checker_.violations().size(), 1u);
  EXPECT_NE(checker_.violations()[0].find("r4 started with 3 runs going on"), std::string::npos)
      << checker_.violations()[0];
}

// A Job made first starts its run before the run exists: that run holds a
// place from its Job on, and a start past the cap is caught at its Job.
TEST_F(CheckerTest, ARunStartedByItsJobBeforeItIsMadeCountsUnderTheCap) {
  server_.create(Actor::kOperator, "heartbeatruns", "ns",
                 scheduler_run("r1", "2026-03-10T10:01:00Z"));
  start("r1");
  start_job_first("r2");
  EXPECT_TRUE(checker_.violations().empty()) << checker_.violations().front();
  start_job_first("r3");
  ASSERT_EQ(checker_.violations().size(), 1u);
  EXPECT_NE(checker_.violations()[0].find("r3 started with 3 runs going on"), std::string::npos)
      << checker_.violations()[0];
  make_carried_run("r2");  // once made, r2 holds its place once, by its Job
  start_job_first("r4");
  ASSERT_EQ(checker_.violations().size(), 2u);
  EXPECT_NE(checker_.violations()[1].find("r4 started with 4 runs going on"), std::string::npos)
      << checker_.violations()[1];
}

TEST_F(CheckerTest, ABeatingRunFailedAsStalledIsCaught) {
  const Json stalled = {{"phase", "Failed"}, {"reason", "Stalled"}};
  server_.create(Actor::kOperator, "heartbeatruns", "ns",
                 scheduler_run("r1", "2026-03-10T09:58:00Z"));
  beats_["ns/r1"] = now_ - std::chrono::seconds(40);  // silent past half the window: a stall
  set_run_status("r1", stalled);
  EXPECT_TRUE(checker_.violations().empty());
  server_.create(Actor::kOperator, "heartbeatruns", "ns",
                 scheduler_run("r2", "2026-03-10T09:59:00Z"));
  beats_["ns/r2"] = now_ - std::chrono::seconds(5);
  set_run_status("r2", stalled);
  ASSERT_EQ(checker_.violations().size(), 1u);
  EXPECT_NE(checker_.violations()[0].find("r2 failed as Stalled"), std::string::npos);
}

TEST_F(CheckerTest, ASecondRunForASlotIsCaughtEvenAfterTheFirstWasDeleted) {
  server_.create(Actor::kOperator, "heartbeatruns", "ns",
                 scheduler_run("r1", "2026-03-10T10:00:00Z"));
  server_.remove(Actor::kUser, "heartbeatruns", "ns", "r1", Json::object());  // kubectl delete
  server_.create(Actor::kOperator, "heartbeatruns", "ns",
                 scheduler_run("r1", "2026-03-10T10:00:00Z"));
  ASSERT_EQ(checker_.violations().size(), 1u);
  EXPECT_NE(checker_.violations()[0].find("second scheduler run"), std::string::npos);
}

// A Job the operator made with no run of its name (made Job-first, its
// process gone before the run) is caught once it has stood so past
// kJobFindsItsRunWithin with a leader up, not before; one whose run comes
// within the bound is fine.
TEST_F(CheckerTest, AJobWithoutItsRunPastTheBoundIsCaught) {
  made_before_its_run("a-100");
  made_before_its_run("a-200");
  const TimePoint made = now_;
  const TimePoint leader_up = now_ - std::chrono::hours(1);
  checker_.check_state(now_, leader_up);
  now_ += kJobFindsItsRunWithin - std::chrono::seconds(1);
  server_.create(Actor::kOperator, "heartbeatruns", "ns",
                 scheduler_run("a-200", "2026-03-10T09:59:00Z"));
  now_ = made + kJobFindsItsRunWithin;
  checker_.check_state(now_, leader_up);
  EXPECT_TRUE(checker_.violations().empty()) << checker_.violations().front();
  now_ += std::chrono::seconds(1);
  checker_.check_state(now_, leader_up);
  ASSERT_EQ(checker_.violations().size(), 1u);
  EXPECT_NE(checker_.violations()[0].find("Job ns/a-100 has 0 run(s)"), std::string::npos)
      << checker_.violations()[0];
  now_ += std::chrono::minutes(5);
  checker_.check_state(now_, leader_up);
  EXPECT_EQ(checker_.violations().size(), 1u);  // once per Job
}

// The bound counts from when a leader came up: no operator can make the
// run while none leads.
TEST_F(CheckerTest, AJobWithoutItsRunIsHeldOnlyAgainstALeaderUpForTheBound) {
  made_before_its_run("a-100");
  checker_.check_state(now_, now_ - std::chrono::hours(1));
  const TimePoint leader_up = now_ + std::chrono::minutes(10);
  now_ = leader_up + kJobFindsItsRunWithin;
  checker_.check_state(now_, leader_up);
  EXPECT_TRUE(checker_.violations().empty()) << checker_.violations().front();
  now_ += std::chrono::seconds(1);
  checker_.check_state(now_, leader_up);
  EXPECT_EQ(checker_.violations().size(), 1u);
}

// A run deleted takes its Job with it by the garbage collector: the Job
// whose every owner is gone is the collector's (even while a run of the
// same name, another uid, stands), never the operator's. A Job the
// collector keeps (another owner lives) must have its run.
TEST_F(CheckerTest, AJobTheGarbageCollectorDeletesIsNotHeldButOneItKeepsIs) {
  for (const char* run : {"r1", "r2"}) {
    server_.create(Actor::kOperator, "heartbeatruns", "ns",
                   scheduler_run(run, std::string("2026-03-10T09:5") + run[1] + ":00Z"));
    start(run);
    set_run_status(run, finished(1));
  }
  // r2's Job is owned by its Agent too (two owners): the collector keeps it.
  Json job = *server_.peek("jobs", "ns", "r2");
  job["metadata"]["ownerReferences"].push_back(
      {{"kind", "Agent"},
       {"name", "a"},
       {"uid", controllers::string_at(*server_.peek("agents", "ns", "a"), "metadata/uid")}});
  server_.replace(Actor::kOperator, "jobs", "ns", "r2", job, false);
  server_.remove(Actor::kOperator, "heartbeatruns", "ns", "r1", Json::object());
  server_.remove(Actor::kOperator, "heartbeatruns", "ns", "r2", Json::object());
  server_.create(Actor::kOperator, "heartbeatruns", "ns",
                 scheduler_run("r1", "2026-03-10T09:53:00Z"));  // another uid, the same name
  const TimePoint leader_up = now_ - std::chrono::hours(1);
  checker_.check_state(now_, leader_up);
  now_ += kJobFindsItsRunWithin + std::chrono::seconds(1);
  checker_.check_state(now_, leader_up);
  ASSERT_EQ(checker_.violations().size(), 1u) << checker_.violations().front();
  EXPECT_NE(checker_.violations()[0].find("Job ns/r2 has 0 run(s)"), std::string::npos)
      << checker_.violations()[0];
}

TEST_F(CheckerTest, ASecondJobForASlotIsCaughtEvenAfterTheFirstWasDeleted) {
  server_.create(Actor::kOperator, "heartbeatruns", "ns",
                 scheduler_run("r1", "2026-03-10T10:00:00Z"));
  server_.create(Actor::kOperator, "heartbeatruns", "ns",
                 scheduler_run("r2", "2026-03-10T10:01:00Z"));
  start("r1");
  start("r2");
  EXPECT_TRUE(checker_.violations().empty()) << checker_.violations().front();
  server_.remove(Actor::kOperator, "jobs", "ns", "r1", Json::object());
  start("r1");
  ASSERT_EQ(checker_.violations().size(), 1u);
  EXPECT_NE(checker_.violations()[0].find("a second Job for slot ns/a|2026-03-10T10:00:00Z"),
            std::string::npos)
      << checker_.violations()[0];
}

// A Job made before its run counts for the run's slot once the run is made.
TEST_F(CheckerTest, AJobMadeBeforeItsRunCountsForItsSlot) {
  made_before_its_run("a-100");
  server_.create(Actor::kOperator, "heartbeatruns", "ns",
                 scheduler_run("a-100", "2026-03-10T10:00:00Z"));
  EXPECT_TRUE(checker_.violations().empty()) << checker_.violations().front();
  server_.remove(Actor::kOperator, "jobs", "ns", "a-100", Json::object());
  start("a-100");
  ASSERT_EQ(checker_.violations().size(), 1u);
  EXPECT_NE(checker_.violations()[0].find("a second Job for slot"), std::string::npos)
      << checker_.violations()[0];
}

// A run whose Job was made started, whatever its phase says: left Queued
// (a crash between its two writes, never adopted) its runner's charge is
// lost. A run with no Job may wait Queued for its paused Agent.
TEST_F(CheckerTest, ARunWhoseJobWasMadeLeftQueuedIsCaughtAfterTheDrain) {
  server_.create(Actor::kOperator, "heartbeatruns", "ns",
                 scheduler_run("r1", "2026-03-10T10:00:00Z"));
  server_.create(Actor::kOperator, "heartbeatruns", "ns",
                 scheduler_run("r2", "2026-03-10T10:01:00Z"));
  set_run_status("r1", {{"phase", "Queued"}});
  set_run_status("r2", {{"phase", "Queued"}});
  start("r1");
  checker_.check_settled();
  ASSERT_EQ(checker_.violations().size(), 1u);
  EXPECT_NE(checker_.violations()[0].find("run ns/r1 not settled after the drain: phase Queued "
                                          "though its Job was made"),
            std::string::npos)
      << checker_.violations()[0];
}

// The audit record: the operator deletes a run only once it is final and
// counted (history limits), and a run whose Agent is gone only past
// --run-retention (30 days here).
TEST_F(CheckerTest, TheOperatorDeletesOnlyCountedRunsAndOrphansOnlyPastRetention) {
  const Json settled = {{"phase", "Succeeded"},
                        {"finishedAt", "2026-03-10T09:00:00Z"},
                        {"usage", {{"costCents", 0}}},
                        {"costRecorded", true}};
  auto make = [&](const std::string& name, const std::string& agent_uid) {
    Json run = scheduler_run(name, "2026-03-10T0" + std::to_string(name.back() - '0') + ":00:00Z");
    if (!agent_uid.empty())
      run["metadata"]["annotations"] = {{"heartbeat.dev/agent-uid", agent_uid}};
    server_.create(Actor::kOperator, "heartbeatruns", "ns", run);
  };
  make("r1", "");
  server_.remove(Actor::kOperator, "heartbeatruns", "ns", "r1", Json::object());
  ASSERT_EQ(checker_.violations().size(), 1u);
  EXPECT_NE(checker_.violations()[0].find("before it was final and counted"), std::string::npos);
  make("r2", "");  // the live Agent's: its history limits may take it
  set_run_status("r2", settled);
  server_.remove(Actor::kOperator, "heartbeatruns", "ns", "r2", Json::object());
  EXPECT_EQ(checker_.violations().size(), 1u);
  make("r3", "uid-of-a-deleted-agent");
  set_run_status("r3", settled);
  server_.remove(Actor::kOperator, "heartbeatruns", "ns", "r3", Json::object());
  ASSERT_EQ(checker_.violations().size(), 2u);
  EXPECT_NE(checker_.violations()[1].find("before its retention"), std::string::npos);
  now_ = *api::parse_rfc3339("2026-04-09T09:00:00Z");  // 30 days after it finished
  make("r4", "uid-of-a-deleted-agent");
  set_run_status("r4", settled);
  server_.remove(Actor::kOperator, "heartbeatruns", "ns", "r4", Json::object());
  EXPECT_EQ(checker_.violations().size(), 2u);
}

// The user deletes and re-applies the Agent just as one of its runs becomes
// final, and the operator's next pass, before its cache sees the deletion,
// trims the older run by the history limits of the Agent it still sees.
// Past kUserChangeSeenWithin the operator has seen it go: only retention may.
TEST_F(CheckerTest, AnOrphanDeletedBeforeTheOperatorSawItsAgentGoIsHistoryNotRetention) {
  const Json settled = {{"phase", "Succeeded"},
                        {"finishedAt", "2026-03-10T09:00:00Z"},
                        {"usage", {{"costCents", 0}}},
                        {"costRecorded", true}};
  const std::string uid =
      controllers::string_at(*server_.peek("agents", "ns", "a"), "metadata/uid");
  for (const char* name : {"r1", "r2"}) {
    Json run = scheduler_run(name, std::string("2026-03-10T0") + name[1] + ":00:00Z");
    run["metadata"]["annotations"] = {{"heartbeat.dev/agent-uid", uid}};
    server_.create(Actor::kOperator, "heartbeatruns", "ns", run);
    set_run_status(name, settled);
  }
  server_.remove(Actor::kUser, "agents", "ns", "a", Json::object());
  server_.create(Actor::kUser, "agents", "ns", {{"metadata", {{"name", "a"}}}, {"spec", {}}});
  now_ += kUserChangeSeenWithin - std::chrono::seconds(1);
  server_.remove(Actor::kOperator, "heartbeatruns", "ns", "r1", Json::object());
  EXPECT_TRUE(checker_.violations().empty()) << checker_.violations().front();
  now_ += std::chrono::seconds(1);
  server_.remove(Actor::kOperator, "heartbeatruns", "ns", "r2", Json::object());
  ASSERT_EQ(checker_.violations().size(), 1u);
  EXPECT_NE(checker_.violations()[0].find("before its retention"), std::string::npos);
}

TEST_F(CheckerTest, ARunStartedBeforePausedUntilIsCaught) {
  set_agent_status({{"pausedUntil", "2026-03-10T10:30:00Z"}});
  server_.create(Actor::kOperator, "heartbeatruns", "ns",
                 scheduler_run("r1", "2026-03-10T10:00:00Z"));
  start("r1");
  ASSERT_EQ(checker_.violations().size(), 1u);
  EXPECT_NE(checker_.violations()[0].find("before pausedUntil"), std::string::npos);
}

TEST_F(CheckerTest, AManualRunStartedBeforePausedUntilIsAllowed) {
  set_agent_status({{"pausedUntil", "2026-03-10T10:30:00Z"}});
  Json manual = scheduler_run("m1", "2026-03-10T10:00:00Z");
  manual["spec"]["invocationSource"] = "manual";
  manual["spec"].erase("scheduledTime");
  server_.create(Actor::kOperator, "heartbeatruns", "ns", manual);
  start("m1");
  EXPECT_TRUE(checker_.violations().empty()) << checker_.violations().front();
}

TEST_F(CheckerTest, ARunStartedOverBudgetIsCaught) {
  set_agent_status({{"spend", {{"period", "2026-03"}, {"cents", 100.2}}}});
  server_.create(Actor::kOperator, "heartbeatruns", "ns",
                 scheduler_run("r1", "2026-03-10T10:00:00Z"));
  start("r1");
  ASSERT_EQ(checker_.violations().size(), 1u);
  EXPECT_NE(checker_.violations()[0].find("over budget"), std::string::npos);
}

// Today's counted runs reach the Agent's dailyCents: the next start is
// caught; yesterday's runs (the control) count for nothing today.
TEST_F(CheckerTest, ARunStartedOverItsDailyBudgetIsCaught) {
  server_.merge_patch(Actor::kUser, "agents", "ns", "a",
                      {{"spec", {{"budget", {{"dailyCents", 2}}}}}}, false);
  server_.create(Actor::kOperator, "heartbeatruns", "ns",
                 scheduler_run("r0", "2026-03-09T10:00:00Z"));
  Json yesterday = finished(5);
  yesterday["finishedAt"] = "2026-03-09T23:59:00Z";
  set_run_status("r0", yesterday);
  server_.create(Actor::kOperator, "heartbeatruns", "ns",
                 scheduler_run("r1", "2026-03-10T09:00:00Z"));
  start("r1");
  EXPECT_TRUE(checker_.violations().empty()) << checker_.violations().front();
  Json today = finished(2);
  today["finishedAt"] = "2026-03-10T09:30:00Z";
  set_run_status("r1", today);
  server_.create(Actor::kOperator, "heartbeatruns", "ns",
                 scheduler_run("r2", "2026-03-10T10:00:00Z"));
  start("r2");
  ASSERT_EQ(checker_.violations().size(), 1u);
  EXPECT_NE(checker_.violations()[0].find("over its daily budget"), std::string::npos);
}

TEST_F(CheckerTest, ARunStartedWhileABudgetStopWaitsForAPersonIsCaught) {
  // February's stop, carried into March: spend is 0 now.
  hold_february_stop();
  server_.create(Actor::kOperator, "heartbeatruns", "ns",
                 scheduler_run("r1", "2026-03-10T10:00:00Z"));
  start("r1");
  ASSERT_EQ(checker_.violations().size(), 1u);
  EXPECT_NE(checker_.violations()[0].find("waits for a person"), std::string::npos);
}

TEST_F(CheckerTest, ARunStartedAfterAPersonSaidResumeIsAllowed) {
  hold_february_stop();
  server_.merge_patch(Actor::kUser, "agents", "ns", "a",
                      {{"metadata", {{"annotations", {{"heartbeat.dev/resume", "ok"}}}}}}, false);
  server_.create(Actor::kOperator, "heartbeatruns", "ns",
                 scheduler_run("r1", "2026-03-10T10:00:00Z"));
  start("r1");
  EXPECT_TRUE(checker_.violations().empty()) << checker_.violations().front();
}

TEST_F(CheckerTest, SpendThatMissesACountedRunIsCaught) {
  server_.create(Actor::kOperator, "heartbeatruns", "ns",
                 scheduler_run("r1", "2026-03-10T10:00:00Z"));
  set_agent_status({{"spend", {{"period", "2026-03"}, {"cents", 1.0}}}});
  set_run_status("r1", finished(2.5));  // counted 2.5, spend says 1.0
  checker_.check_state(now_, now_);
  ASSERT_FALSE(checker_.violations().empty());
  EXPECT_NE(checker_.violations()[0].find("less than its counted runs"), std::string::npos);
}

TEST_F(CheckerTest, SpendCountedTwiceIsCaughtWhenSettled) {
  server_.create(Actor::kOperator, "heartbeatruns", "ns",
                 scheduler_run("r1", "2026-03-10T10:00:00Z"));
  set_agent_status({{"spend", {{"period", "2026-03"}, {"cents", 5.0}}}});
  set_run_status("r1", finished(2.5));
  checker_.check_settled();
  ASSERT_EQ(checker_.violations().size(), 1u);
  EXPECT_NE(checker_.violations()[0].find("differs from the sum"), std::string::npos);
}

TEST_F(CheckerTest, UsageChangedAfterCountingAndALostMarkAreCaught) {
  server_.create(Actor::kOperator, "heartbeatruns", "ns",
                 scheduler_run("r1", "2026-03-10T10:00:00Z"));
  set_agent_status({{"spend", {{"period", "2026-03"}, {"cents", 2.5}}}});
  set_run_status("r1", finished(2.5));
  set_run_status("r1", {{"usage", {{"costCents", 9}}}});
  set_run_status("r1", {{"costRecorded", false}});
  ASSERT_EQ(checker_.violations().size(), 2u);
  EXPECT_NE(checker_.violations()[0].find("changed its usage"), std::string::npos);
  EXPECT_NE(checker_.violations()[1].find("lost costRecorded"), std::string::npos);
}

TEST_F(CheckerTest, TheOperatorWritingAnAgentSpecIsCaught) {
  server_.merge_patch(Actor::kOperator, "agents", "ns", "a", {{"spec", {{"paused", true}}}}, false);
  ASSERT_EQ(checker_.violations().size(), 1u);
  EXPECT_NE(checker_.violations()[0].find("wrote the spec"), std::string::npos);
}

TEST_F(CheckerTest, ARunLeftRunningPastItsDeadlinesIsCaught) {
  server_.create(Actor::kOperator, "heartbeatruns", "ns",
                 scheduler_run("r1", "2026-03-10T10:00:00Z"));
  set_run_status("r1", {{"phase", "Running"}, {"startedAt", "2026-03-10T10:00:00Z"}});
  checker_.check_state(now_ + std::chrono::minutes(3), now_ - std::chrono::hours(1));
  EXPECT_TRUE(checker_.violations().empty());  // 60 + 5 + 30 + 60 + 120 s not yet passed
  checker_.check_state(now_ + std::chrono::minutes(6), now_ - std::chrono::hours(1));
  ASSERT_EQ(checker_.violations().size(), 1u);
  EXPECT_NE(checker_.violations()[0].find("still Running"), std::string::npos);
}

TEST_F(CheckerTest, TwoQueuedScheduledRunsOfOneAgentAreCaught) {
  server_.create(Actor::kOperator, "heartbeatruns", "ns",
                 scheduler_run("r1", "2026-03-10T10:00:00Z"));
  server_.create(Actor::kOperator, "heartbeatruns", "ns",
                 scheduler_run("r2", "2026-03-10T10:01:00Z"));
  checker_.check_state(now_, now_);
  ASSERT_EQ(checker_.violations().size(), 1u);
  EXPECT_NE(checker_.violations()[0].find("more than one queued"), std::string::npos);
}

// A run whose Job exists has started, though its Running status is not
// written yet (the operator writes it a pass later); once the Job is gone
// and the run is still not final, it counts as waiting again.
TEST_F(CheckerTest, AStartedRunWithoutItsRunningStatusIsNotQueued) {
  server_.create(Actor::kOperator, "heartbeatruns", "ns",
                 scheduler_run("r1", "2026-03-10T10:00:00Z"));
  start("r1");
  server_.create(Actor::kOperator, "heartbeatruns", "ns",
                 scheduler_run("r2", "2026-03-10T10:01:00Z"));
  checker_.check_state(now_, now_);
  EXPECT_TRUE(checker_.violations().empty());
  server_.remove(Actor::kOperator, "jobs", "ns", "r1", Json::object());
  checker_.check_state(now_, now_);
  ASSERT_EQ(checker_.violations().size(), 1u);
  EXPECT_NE(checker_.violations()[0].find("more than one queued"), std::string::npos);
}

// Agents b (team x), c (team y) beside a (made team x), and team-x's policy.
class PolicyCheckerTest : public CheckerTest {
 protected:
  PolicyCheckerTest() {
    server_.merge_patch(Actor::kUser, "agents", "ns", "a",
                        {{"metadata", {{"labels", {{"team", "x"}}}}}}, false);
    for (const auto& [name, team] : {std::pair{"b", "x"}, std::pair{"c", "y"}}) {
      server_.create(Actor::kUser, "agents", "ns",
                     {{"metadata", {{"name", name}, {"labels", {{"team", team}}}}},
                      {"spec", {{"runtime", {{"timeoutSeconds", 60}}}}}});
    }
  }
  void create_policy(Json spec) {
    spec["selector"] = {{"matchLabels", {{"team", "x"}}}};
    server_.create(Actor::kUser, "heartbeatpolicies", "ns",
                   {{"metadata", {{"name", "team-x"}}}, {"spec", spec}});
  }
  void create_run(const std::string& run, const std::string& agent,
                  const std::string& policies = "") {
    Json manual = {{"metadata", {{"name", run}}},
                   {"spec", {{"agentRef", {{"name", agent}}}, {"invocationSource", "manual"}}}};
    if (!policies.empty()) {
      manual["metadata"]["annotations"] = {{"heartbeat.dev/policies", policies}};
    }
    server_.create(Actor::kOperator, "heartbeatruns", "ns", manual);
  }
  // A run stamped with `policies` at its start, finished `finished_at` and counted at `cents`.
  void counted_run(const std::string& run, const std::string& agent, double cents,
                   const std::string& policies, const char* finished_at = "2026-03-10T09:00:00Z") {
    create_run(run, agent, policies);
    start(run);
    Json status = finished(cents);
    status["finishedAt"] = finished_at;
    set_run_status(run, status);
  }
  // `run` finishes charged 3 cents for 3 calls of 1 cent.
  void finish_three_calls(const std::string& run) {
    Json done = finished(3);
    done["finishedAt"] = "2026-03-10T09:30:00Z";
    done["usage"]["llmCalls"] = 3;
    set_run_status(run, done);
  }
  // Past the time the operator may take to see a user's change.
  void wait_until_seen() { now_ += kUserChangeSeenWithin + std::chrono::seconds(1); }
};

TEST_F(PolicyCheckerTest, ASecondRunOfAPolicysAgentsUnderItsCapOfOneIsCaught) {
  create_policy({{"maxConcurrentRuns", 1}});
  wait_until_seen();
  for (const auto& [run, agent] :
       {std::pair{"r1", "a"}, std::pair{"r2", "c"}, std::pair{"r3", "b"}}) {
    create_run(run, agent);
  }
  start("r1");
  start("r2");  // c is not selected: its run holds no place of team-x
  set_run_status("r2", finished(1));
  EXPECT_TRUE(checker_.violations().empty()) << checker_.violations().front();
  start("r3");
  ASSERT_EQ(checker_.violations().size(), 1u);
  EXPECT_NE(checker_.violations()[0].find("r3 started with 2 runs of HeartbeatPolicy ns/team-x"),
            std::string::npos)
      << checker_.violations()[0];
}

TEST_F(PolicyCheckerTest, ARunStartedBeforeTheOperatorCouldSeeARelabelIsExcused) {
  create_policy({{"maxConcurrentRuns", 1}});
  wait_until_seen();
  create_run("r1", "a");
  create_run("r2", "c");
  start("r1");
  start("r2");
  set_run_status("r2", {{"phase", "Running"}});
  server_.merge_patch(Actor::kUser, "agents", "ns", "c",
                      {{"metadata", {{"labels", {{"team", "x"}}}}}}, false);
  create_run("r3", "b");
  set_run_status("r1", finished(1));
  start("r3");  // c joined team x just now: 2 of 1 in use, but the operator may not know yet
  EXPECT_TRUE(checker_.violations().empty()) << checker_.violations().front();
}

// The team's spend is what the runs stamped with its policy were charged
// this month: a run of another policy or of last month does not count; a
// run of an agent since relabelled out of it still does.
TEST_F(PolicyCheckerTest, ARunStartedOnceTheTeamBudgetIsSpentIsCaught) {
  create_policy({{"budget", {{"monthlyCents", 3}}}});
  counted_run("c1", "c", 50, "team-y");
  counted_run("b0", "b", 50, "team-x", "2026-02-28T23:00:00Z");  // last month's
  counted_run("a1", "a", 2, "team-x");
  create_run("r1", "b", "team-x");
  start("r1");
  Json done = finished(1.5);
  done["finishedAt"] = "2026-03-10T10:00:00Z";
  set_run_status("r1", done);  // 3.5 of 3 cents: spent
  server_.merge_patch(Actor::kUser, "agents", "ns", "b",
                      {{"metadata", {{"labels", {{"team", "z"}}}}}}, false);
  create_run("r2", "a");
  start("r2");  // within the time the operator may take to see r1's charge
  EXPECT_TRUE(checker_.violations().empty()) << checker_.violations().front();
  wait_until_seen();
  set_run_status("r2", finished(0));
  create_run("r3", "a");
  start("r3");
  ASSERT_EQ(checker_.violations().size(), 1u);
  EXPECT_NE(checker_.violations()[0].find("r3 started while HeartbeatPolicy ns/team-x's team "
                                          "budget is spent"),
            std::string::npos)
      << checker_.violations()[0];
}

// What a run counts for is the stamp on its Job, which the author cannot
// change: a run whose annotation was rewritten after start still counts.
TEST_F(PolicyCheckerTest, ARewrittenRunStampStillCountsForItsTeam) {
  create_policy({{"budget", {{"monthlyCents", 3}}}});
  create_run("r1", "a", "team-x");
  start("r1");
  server_.merge_patch(Actor::kUser, "heartbeatruns", "ns", "r1",
                      {{"metadata", {{"annotations", {{"heartbeat.dev/policies", ""}}}}}}, false);
  Json done = finished(4);
  done["finishedAt"] = "2026-03-10T10:00:00Z";
  set_run_status("r1", done);
  wait_until_seen();
  create_run("r2", "b");
  start("r2");
  ASSERT_EQ(checker_.violations().size(), 1u);
  EXPECT_NE(checker_.violations()[0].find("r2 started while HeartbeatPolicy ns/team-x's team "
                                          "budget is spent"),
            std::string::npos)
      << checker_.violations()[0];
}

// The measure of how far runs in flight took a team past its budget: the
// part of the crossing run's cost over the budget, in calls of its size.
TEST_F(PolicyCheckerTest, TheTeamOvershootIsMeasuredInCallsOfTheRunsThatPassedTheBudget) {
  create_policy({{"budget", {{"monthlyCents", 3}}}});
  counted_run("a1", "a", 2, "team-x");
  EXPECT_EQ(checker_.worst_team_overshoot().calls, 0);
  create_run("b1", "b", "team-x");
  start("b1");
  finish_three_calls("b1");  // 5 of 3 cents: 2 over, in a run of 3 calls of 1 cent
  EXPECT_NEAR(checker_.worst_team_overshoot().cents, 2, 1e-9);
  EXPECT_NEAR(checker_.worst_team_overshoot().calls, 2, 1e-9);
  EXPECT_EQ(checker_.worst_team_overshoot().runs, 1);
  EXPECT_NEAR(checker_.worst_run_overshoot_calls(), 2, 1e-9);
}

// A run whose Job was made first is held to its team's budget at its Job,
// and its charge, once the run is made, counts for the team it was
// admitted under.
TEST_F(PolicyCheckerTest, ARunStartedByItsJobIsHeldToItsTeamAndCountedForIt) {
  create_policy({{"budget", {{"monthlyCents", 3}}}});
  counted_run("a1", "a", 2, "team-x");
  start_job_first("b1", "b", "team-x");
  make_carried_run("b1");
  finish_three_calls("b1");  // 5 of 3 cents: 2 over, in a run of 3 calls of 1 cent
  EXPECT_NEAR(checker_.worst_team_overshoot().cents, 2, 1e-9);
  EXPECT_TRUE(checker_.violations().empty()) << checker_.violations().front();
  wait_until_seen();
  start_job_first("a2", "a", "team-x");
  ASSERT_EQ(checker_.violations().size(), 1u);
  EXPECT_NE(checker_.violations()[0].find("a2 started while HeartbeatPolicy ns/team-x's team "
                                          "budget is spent"),
            std::string::npos)
      << checker_.violations()[0];
}

// A runner whose usage report broke its bounds is charged its bound, more
// than was held for it: the team's spend past its hold is that runner's
// breach, so a well-behaved run finishing after it is measured against what
// was held, not against the breach.
TEST_F(PolicyCheckerTest, ARunawayRunnerCountsAtItsHoldInTheOvershootOfOthers) {
  create_policy({{"budget", {{"monthlyCents", 3}}}});
  create_run("a1", "a", "team-x");
  start("a1");
  create_run("b1", "b", "team-x");
  start("b1");
  Json runaway = finished(4);  // held 1 cent, charged its bound of 4
  runaway["phase"] = "Failed";
  runaway["reason"] = controllers::kReasonUsageOutOfBounds;
  runaway["heldCents"] = 1;
  runaway["finishedAt"] = "2026-03-10T09:20:00Z";
  set_run_status("a1", runaway);
  EXPECT_EQ(checker_.worst_team_overshoot().calls, 0) << "the runaway itself is not measured";
  Json done = finished(2);  // 1 held + 2 = 3: within the budget
  done["finishedAt"] = "2026-03-10T09:30:00Z";
  done["usage"]["llmCalls"] = 2;
  set_run_status("b1", done);
  EXPECT_EQ(checker_.worst_team_overshoot().calls, 0);
  // The control: a run past what the runaway's hold left is measured.
  create_run("c1", "c", "team-x");
  start("c1");
  done["usage"]["costCents"] = 1;
  done["usage"]["llmCalls"] = 1;
  done["finishedAt"] = "2026-03-10T09:40:00Z";
  set_run_status("c1", done);
  EXPECT_NEAR(checker_.worst_team_overshoot().calls, 1, 1e-9);
}

TEST_F(PolicyCheckerTest, ARunStartedWhileItsPolicyIsPausedIsCaught) {
  create_policy({{"paused", true}});
  create_run("r1", "a");
  start("r1");  // within the time the operator may take to see the pause
  wait_until_seen();
  create_run("r2", "c");
  start("r2");  // c is not selected
  EXPECT_TRUE(checker_.violations().empty()) << checker_.violations().front();
  set_run_status("r1", finished(0));  // under the operator-wide cap of 2
  set_run_status("r2", finished(0));
  create_run("r3", "b");
  start("r3");
  ASSERT_EQ(checker_.violations().size(), 1u);
  EXPECT_NE(checker_.violations()[0].find("r3 (manual) started while HeartbeatPolicy ns/team-x "
                                          "is paused"),
            std::string::npos)
      << checker_.violations()[0];
  // Resumed: runs start again.
  server_.merge_patch(Actor::kUser, "heartbeatpolicies", "ns", "team-x",
                      {{"spec", {{"paused", false}}}}, false);
  set_run_status("r3", finished(0));
  create_run("r4", "a");
  start("r4");
  EXPECT_EQ(checker_.violations().size(), 1u) << checker_.violations().back();
}

TEST_F(PolicyCheckerTest, TheOperatorWritingAPolicySpecIsCaught) {
  create_policy({{"maxConcurrentRuns", 1}});
  server_.merge_patch(Actor::kOperator, "heartbeatpolicies", "ns", "team-x",
                      {{"status", {{"agents", 2}}}}, true);
  EXPECT_TRUE(checker_.violations().empty()) << checker_.violations().front();
  server_.merge_patch(Actor::kOperator, "heartbeatpolicies", "ns", "team-x",
                      {{"spec", {{"maxConcurrentRuns", 2}}}}, false);
  ASSERT_EQ(checker_.violations().size(), 1u);
  EXPECT_NE(checker_.violations()[0].find("wrote the spec of HeartbeatPolicy ns/team-x"),
            std::string::npos);
}

TEST(PolicySelectsTest, SelectsByLabelsAndExpressionsInItsNamespaceOnly) {
  PolicyLimits p =
      policy_limits({{"metadata", {{"namespace", "ns"}, {"name", "p"}}},
                     {"spec",
                      {{"selector",
                        {{"matchLabels", {{"team", "x"}}},
                         {"matchExpressions",
                          {{{"key", "tier"}, {"operator", "NotIn"}, {"values", {"gold"}}},
                           {{"key", "env"}, {"operator", "Exists"}}}}}},
                       {"maxConcurrentRuns", 2}}}});
  EXPECT_EQ(p.max_concurrent_runs, 2);
  auto agent = [](const std::string& ns, const Json& labels) {
    return Json{{"metadata", {{"namespace", ns}, {"name", "a"}, {"labels", labels}}}};
  };
  EXPECT_TRUE(policy_selects(p, agent("ns", {{"team", "x"}, {"env", "prod"}})));
  EXPECT_FALSE(policy_selects(p, agent("other", {{"team", "x"}, {"env", "prod"}})));
  EXPECT_FALSE(policy_selects(p, agent("ns", {{"team", "x"}})));
  EXPECT_FALSE(policy_selects(p, agent("ns", {{"team", "x"}, {"env", "a"}, {"tier", "gold"}})));
  EXPECT_FALSE(policy_selects(p, agent("ns", {{"team", "y"}, {"env", "prod"}})));
  p.selector = Json();
  EXPECT_TRUE(policy_selects(p, agent("ns", Json::object())));
}

}  // namespace
}  // namespace hb::sim
