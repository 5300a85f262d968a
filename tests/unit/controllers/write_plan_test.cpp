// The write plan: the order of one reconcile's writes (a table), what each
// write carries, and the loop that performs them stopping at the first
// failure. The operator's reconciler performs exactly this plan.
#include "controllers/plan/write_plan.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "tests/unit/controllers/fixtures.h"

namespace hb::controllers {
namespace {

using namespace testing;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::Not;

const TimePoint kNow = at("2024-05-01T12:10:00Z");

Json queued_callback(const std::string& name) {
  return run(name, "callback");
}

// One pass with something of every kind to write.
struct Scenario {
  std::vector<Json> runs;
  std::vector<RunObservation> observed;
  AgentDecision d;

  Scenario() {
    runs = {with_status(run("r-stall"), {{"phase", "Running"}, {"jobName", "r-stall"}}),
            with_status(run("r-done"), {{"phase", "Succeeded"},
                                        {"finishedAt", "2024-05-01T12:09:00Z"},
                                        {"usage", {{"costCents", 5}}}}),
            queued_callback("r-q1"),
            queued_callback("r-late"),
            run("r-q2"),
            with_status(run("r-old"), {{"phase", "Succeeded"}, {"costRecorded", true}})};
    observed = observe_all(runs, kNow);
    observed[0].delete_job = true;
    d.create_run = RunRequest{"bot-1714565400", kSourceScheduler, kNow, ""};
    d.invoke_run = RunRequest{"bot-invoke-1", kSourceManual, std::nullopt, "by hand"};
    d.status_changed = true;
    d.mark = {"r-done"};
    d.status.recent_runs = std::make_shared<const std::vector<LedgerEntry>>(
        std::vector<LedgerEntry>{{"r-done", "Succeeded", 0, 7.0, kNow}});
    d.events = {{EventTarget::kRun, "r-done", false, "RunSucceeded", "ok", true},
                {EventTarget::kAgent, "bot", true, "BudgetExceeded", "spent", false},
                {EventTarget::kRun, "r-stall", true, "RunStalled", "no beat", false}};
    d.coalesce = {{"r-late", "r-q1", "wake"}};
    d.start_run = "r-q1";
    d.queued_messages = {{"r-q2", "waits for r-q1"}};
    d.delete_runs = {"r-old"};
  }

  std::vector<PlannedWrite> plan(bool routine_events = false,
                                 std::vector<bool> has_job = {}) const {
    WritePlanInput in;
    in.decision = &d;
    in.observed = &observed;
    in.runs = &runs;
    in.has_job = std::move(has_job);
    in.routine_events = routine_events;
    in.now = kNow;
    return plan_writes(in);
  }
};

std::string describe(const PlannedWrite& w) {
  switch (w.op) {
    case WriteOp::kDeleteJob:
      return "delete job " + w.run;
    case WriteOp::kCreateRun:
      return "create run " + w.run;
    case WriteOp::kInvokeRun:
      return "invoke run " + w.run;
    case WriteOp::kMentionRun:
      return "mention run " + w.mention->name;
    case WriteOp::kReplaceAgentStatus:
      return "agent status";
    case WriteOp::kRunStatus:
      return "run status " + w.run;
    case WriteOp::kStartRun:
      return "start run " + w.run;
    case WriteOp::kStartSlotRun:
      return "start slot run " + w.run;
    case WriteOp::kDeleteRun:
      return "delete run " + w.run;
    case WriteOp::kEvent:
      return "event " + w.event->reason;
  }
  return "unknown write";
}

std::vector<std::string> describe(const std::vector<PlannedWrite>& plan) {
  std::vector<std::string> out;
  for (const PlannedWrite& w : plan) out.push_back(describe(w));
  return out;
}

// The run to start has a write of its own among the counting writes (the
// callback run r-q1 records the wakeup folded into it): it starts after them.
TEST(WritePlan, OrderIsTheCrashSafeOne) {
  EXPECT_THAT(
      describe(Scenario().plan()),
      ElementsAre("delete job r-stall", "create run bot-1714565400", "invoke run bot-invoke-1",
                  "agent status", "event BudgetExceeded", "run status r-done", "event RunStalled",
                  "run status r-q1", "run status r-late", "start run r-q1", "run status r-q2",
                  "delete run r-old"));
}

// Otherwise the Job goes right after the creates, ahead of the writes that
// count finished runs (issue 15: they queue as lifecycle behind every other
// agent's dispatch), which keep their own order.
TEST(WritePlan, TheStartGoesAheadOfTheCountingWrites) {
  Scenario s;
  s.d.coalesce.clear();
  EXPECT_THAT(
      describe(s.plan()),
      ElementsAre("delete job r-stall", "create run bot-1714565400", "invoke run bot-invoke-1",
                  "start run r-q1", "agent status", "event BudgetExceeded", "run status r-done",
                  "event RunStalled", "run status r-q2", "delete run r-old"));
}

TEST(WritePlan, FinalStatusesAreTheCountedAndFoldedRuns) {
  const std::map<std::string, Json> finals = final_statuses(Scenario().plan());
  ASSERT_EQ(finals.size(), 2u);
  EXPECT_EQ(finals.at("r-done").value("costRecorded", false), true);
  EXPECT_TRUE(finals.contains("r-late"));  // folded into r-q1
}

std::vector<std::string> classes(const std::vector<PlannedWrite>& plan) {
  std::vector<std::string> out;
  for (const PlannedWrite& w : plan) {
    out.push_back(describe(w) + ": " + std::string(kube::request_class_name(w.priority.cls)));
  }
  return out;
}

// Issue 15: the writes that start a heartbeat queue first in the client's
// rate limiter, what ends or counts a run next, the rest last.
TEST(WritePlan, EachWriteQueuesInItsClass) {
  EXPECT_THAT(classes(Scenario().plan()),
              ElementsAre("delete job r-stall: lifecycle", "create run bot-1714565400: dispatch",
                          "invoke run bot-invoke-1: dispatch",
                          "agent status: lifecycle",  // it counts r-done's spend
                          "event BudgetExceeded: bookkeeping", "run status r-done: lifecycle",
                          "event RunStalled: bookkeeping", "run status r-q1: lifecycle",
                          "run status r-late: lifecycle", "start run r-q1: dispatch",
                          "run status r-q2: bookkeeping",  // a Queued message
                          "delete run r-old: bookkeeping"));
}

TEST(WritePlan, AnAgentStatusThatCountsNoSpendIsBookkeeping) {
  Scenario s;
  s.d.mark.clear();
  const std::vector<PlannedWrite> plan = s.plan();
  EXPECT_THAT(classes(plan), Contains("agent status: bookkeeping"));
}

// What may wait behind the per-agent objects: a first status, a Queued
// message, history; not a run's start, end or charge.
TEST(WritePlan, OnlyAPlanOfBookkeepingMayWait) {
  EXPECT_TRUE(only_bookkeeping({}));
  EXPECT_FALSE(only_bookkeeping(Scenario().plan()));  // every class in it
  AgentDecision status_only;
  status_only.status_changed = true;
  status_only.queued_messages = {{"r-q2", "waits for r-q1"}};
  Scenario s;
  s.d = status_only;
  s.observed = observe_all(s.runs, kNow);  // no Job to delete
  const std::vector<PlannedWrite> plan = s.plan();
  ASSERT_THAT(describe(plan), ElementsAre("agent status", "run status r-q2"));
  EXPECT_TRUE(only_bookkeeping(plan));
  s.d.mark = {"r-done"};  // the same status now counts a run: lifecycle
  s.d.status.recent_runs = std::make_shared<const std::vector<LedgerEntry>>(
      std::vector<LedgerEntry>{{"r-done", "Succeeded", 0, 7.0, kNow}});
  EXPECT_FALSE(only_bookkeeping(s.plan()));
}

TEST(WritePlan, WithinDispatchTheEarlierSlotQueuesFirst) {
  Scenario s;
  s.runs[4] = run("r-q2", "scheduler", at("2024-05-01T12:00:00Z"));
  s.observed = observe_all(s.runs, kNow);
  s.d.start_run = "r-q2";
  const std::vector<PlannedWrite> plan = s.plan();
  int64_t create_order = -1, start_order = -1;
  for (const PlannedWrite& w : plan) {
    if (w.op == WriteOp::kCreateRun) create_order = w.priority.order;
    if (w.op == WriteOp::kStartRun) start_order = w.priority.order;
  }
  EXPECT_EQ(create_order, 1714565400 * kDispatchStages + 1);  // the new slot, 12:10
  EXPECT_EQ(start_order, 1714564800 * kDispatchStages);       // the queued run's, 12:00: first
}

// One write between the due slot and its Job: the Job, made before the
// run, which the next pass makes from it (run_after_job.h).
TEST(WritePlan, TheSlotsOwnRunStartedInThisPassIsMadeAfterItsJob) {
  Scenario s;
  s.d.start_run = "bot-1714565400";  // the slot's own run, not made yet
  const std::vector<PlannedWrite> plan = s.plan();
  EXPECT_THAT(describe(plan), Not(Contains("create run bot-1714565400")));
  EXPECT_THAT(describe(plan), Contains("start slot run bot-1714565400"));
  for (const PlannedWrite& w : plan) {
    if (w.op != WriteOp::kStartSlotRun) continue;
    EXPECT_EQ(w.priority.cls, kube::RequestClass::kDispatch);
    // Ahead of another agent's run create for the same slot.
    EXPECT_EQ(w.priority.order, 1714565400 * kDispatchStages);
    ASSERT_TRUE(w.request.has_value());
    EXPECT_EQ(w.request->slot, kNow);
  }
  // Positive control: a queued run started, the slot's run created as before.
  EXPECT_THAT(describe(Scenario().plan()), Contains("create run bot-1714565400"));
}

TEST(WritePlan, RoutineEventsOnlyWhenAskedFor) {
  EXPECT_THAT(describe(Scenario().plan(true)), Contains("event RunSucceeded"));
  EXPECT_THAT(describe(Scenario().plan(false)), Not(Contains("event RunSucceeded")));
}

TEST(WritePlan, AJobNotInTheCacheIsNotDeleted) {
  EXPECT_THAT(describe(Scenario().plan(false, {false, true, true, true, true, true})),
              Not(Contains("delete job r-stall")));
}

TEST(WritePlan, CountedRunRecordsWhatTheLedgerCharged) {
  for (const PlannedWrite& w : Scenario().plan()) {
    if (w.op != WriteOp::kRunStatus || w.run != "r-done") continue;
    EXPECT_EQ(w.purpose, RunStatusPurpose::kCounted);
    EXPECT_TRUE(w.final_with_label);
    EXPECT_EQ(w.status["costRecorded"], true);
    EXPECT_EQ(w.status["usage"]["costCents"], 7.0);  // the ledger's, not the observed 5
    return;
  }
  FAIL() << "no counted write for r-done";
}

TEST(WritePlan, CoalescedRunsKeepTheReasonThenEnd) {
  const std::vector<PlannedWrite> plan = Scenario().plan();
  const PlannedWrite* kept = nullptr;
  const PlannedWrite* folded = nullptr;
  for (const PlannedWrite& w : plan) {
    if (w.purpose == RunStatusPurpose::kCoalescedInto) kept = &w;
    if (w.purpose == RunStatusPurpose::kFolded) folded = &w;
  }
  ASSERT_TRUE(kept && folded);
  EXPECT_EQ(kept->run, "r-q1");
  EXPECT_EQ(kept->status["coalesced"]["count"], 1);
  EXPECT_FALSE(kept->final_with_label);
  EXPECT_EQ(folded->run, "r-late");
  EXPECT_EQ(folded->folded_into, "r-q1");
  EXPECT_EQ(folded->status["phase"], "Cancelled");
  EXPECT_TRUE(folded->final_with_label);
  EXPECT_LT(kept, folded);  // the reason is kept before the run it came from ends
}

TEST(WritePlan, QueuedRunGetsItsMessage) {
  for (const PlannedWrite& w : Scenario().plan()) {
    if (w.op == WriteOp::kRunStatus && w.run == "r-q2") {
      EXPECT_EQ(w.status["phase"], "Queued");
      EXPECT_EQ(w.status["message"], "waits for r-q1");
      return;
    }
  }
  FAIL() << "no Queued message for r-q2";
}

// Records every call; fails, refuses a name or holds a start back on cue.
struct ScriptedWriter : PlanWriter {
  std::vector<std::string> calls;
  std::string fail_at;     // the call that fails
  std::string name_taken;  // create_run of this name finds someone else's run
  bool hold_back = false;  // start_run finds an object in the way

  WriteResult answer(std::string call) {
    calls.push_back(call);
    return call == fail_at ? WriteResult::kFailed : WriteResult::kDone;
  }
  WriteResult delete_job(const std::string& r) override { return answer("delete job " + r); }
  WriteResult create_run(const RunRequest& q) override {
    const WriteResult result = answer("create run " + q.name);
    return q.name == name_taken ? WriteResult::kNameTaken : result;
  }
  WriteResult invoke_run(const RunRequest& q) override {
    const WriteResult result = answer("invoke run " + q.name);
    return q.name == name_taken ? WriteResult::kNameTaken : result;
  }
  WriteResult mention_run(const MentionRequest& q) override {
    return answer("mention run " + q.name);
  }
  WriteResult replace_agent_status(const Json&) override { return answer("agent status"); }
  WriteResult write_run_status(const PlannedWrite& w) override {
    return answer("run status " + w.run);
  }
  WriteResult start_run(const std::string& r) override {
    const WriteResult result = answer("start run " + r);
    return hold_back && result == WriteResult::kDone ? WriteResult::kHeldBack : result;
  }
  WriteResult start_slot_run(const RunRequest& q) override {
    const WriteResult result = answer("start slot run " + q.name);
    return hold_back && result == WriteResult::kDone ? WriteResult::kHeldBack : result;
  }
  WriteResult delete_run(const std::string& r) override { return answer("delete run " + r); }
  void record_event(const Event& e) override { calls.push_back("event " + e.reason); }
};

// Up to the Job it makes: the pass ends there and the next pass, queued at
// once, decides the rest again (issue 15: a worker must not hold dispatches
// back for bookkeeping).
TEST(PerformPlan, PerformsEveryWriteInOrderUpToTheJobItMakes) {
  const std::vector<PlannedWrite> plan = Scenario().plan();
  ScriptedWriter writer;
  const PlanOutcome outcome = perform_plan(plan, writer);
  EXPECT_TRUE(outcome.completed);
  EXPECT_FALSE(outcome.start_held_back);
  EXPECT_TRUE(outcome.rest_left);
  std::vector<std::string> expected = describe(plan);
  expected.erase(std::find(expected.begin(), expected.end(), "start run r-q1") + 1, expected.end());
  EXPECT_EQ(writer.calls, expected);
  EXPECT_EQ(outcome.performed, expected.size());
}

// Started ahead of the counting writes: the pass ends after the agent
// status (it records how the slot was handled, which the next pass must
// not decide again) and the Events it makes true.
TEST(PerformPlan, AStartAheadOfTheCountingEndsThePassAfterTheAgentStatus) {
  Scenario s;
  s.d.coalesce.clear();
  ScriptedWriter writer;
  const PlanOutcome outcome = perform_plan(s.plan(), writer);
  EXPECT_TRUE(outcome.completed);
  EXPECT_TRUE(outcome.rest_left);
  EXPECT_THAT(writer.calls, ElementsAre("delete job r-stall", "create run bot-1714565400",
                                        "invoke run bot-invoke-1", "start run r-q1", "agent status",
                                        "event BudgetExceeded"));
}

// A slot's own run started in the pass that created it (an agent's first
// heartbeat, whose first status is still to be written): the pass ends at
// the Job and the status, which counts nothing, waits for the next pass;
// that run's scheduledTime tells the next pass the slot is handled.
TEST(PerformPlan, AStartOfTheSlotsOwnRunLeavesABookkeepingStatusToTheNextPass) {
  Scenario s;
  s.runs = {run("bot-1714565400", "scheduler", kNow)};
  s.observed = observe_all(s.runs, kNow);
  s.d = AgentDecision{};
  s.d.create_run = RunRequest{"bot-1714565400", kSourceScheduler, kNow, ""};
  s.d.start_run = "bot-1714565400";
  s.d.status_changed = true;
  s.d.events = {{EventTarget::kAgent, "bot", false, "Ready", "ready", false}};
  const std::vector<PlannedWrite> plan = s.plan();
  ASSERT_THAT(classes(plan), Contains("agent status: bookkeeping"));
  ScriptedWriter writer;
  const PlanOutcome outcome = perform_plan(plan, writer);
  EXPECT_TRUE(outcome.completed);
  EXPECT_TRUE(outcome.rest_left);
  EXPECT_THAT(writer.calls, ElementsAre("start slot run bot-1714565400"));
}

// The same bookkeeping status after the start of a run queued earlier (the
// slot may have coalesced into it): only the status records that, so the
// pass ends after it.
TEST(PerformPlan, AStartOfAnEarlierRunWritesTheStatusBeforeTheRestWaits) {
  Scenario s;
  s.d.coalesce.clear();
  s.d.mark.clear();  // the status counts nothing: bookkeeping
  s.d.create_run.reset();
  s.d.invoke_run.reset();
  ASSERT_THAT(classes(s.plan()), Contains("agent status: bookkeeping"));
  ScriptedWriter writer;
  const PlanOutcome outcome = perform_plan(s.plan(), writer);
  EXPECT_TRUE(outcome.rest_left);
  EXPECT_THAT(writer.calls, ElementsAre("delete job r-stall", "start run r-q1", "agent status",
                                        "event BudgetExceeded", "event RunStalled"));
}

TEST(PerformPlan, APassWithoutAStartPerformsItAll) {
  Scenario s;
  s.d.start_run.reset();
  const std::vector<PlannedWrite> plan = s.plan();
  ScriptedWriter writer;
  const PlanOutcome outcome = perform_plan(plan, writer);
  EXPECT_TRUE(outcome.completed);
  EXPECT_FALSE(outcome.rest_left);
  EXPECT_EQ(writer.calls, describe(plan));
}

// Only Events after the Job: they are written (a later pass would not
// decide them again), and nothing is left.
TEST(PerformPlan, OnlyEventsAfterTheJobAreNotLeft) {
  std::vector<PlannedWrite> plan = Scenario().plan();
  const auto start = std::find_if(plan.begin(), plan.end(),
                                  [](const PlannedWrite& w) { return w.op == WriteOp::kStartRun; });
  ASSERT_NE(start, plan.end());
  plan.erase(start + 1, plan.end());
  PlannedWrite event;
  event.event = Event{EventTarget::kAgent, "bot", false, "Started", "started", false};
  plan.push_back(event);
  ScriptedWriter writer;
  const PlanOutcome outcome = perform_plan(plan, writer);
  EXPECT_FALSE(outcome.rest_left);
  EXPECT_EQ(writer.calls.back(), "event Started");
}

TEST(PerformPlan, TellsTheWriterEachWritesPriorityFirst) {
  struct PriorityWriter : ScriptedWriter {
    std::vector<kube::RequestClass> seen;
    void before(const PlannedWrite& w) override { seen.push_back(w.priority.cls); }
  };
  const std::vector<PlannedWrite> plan = Scenario().plan();
  PriorityWriter writer;
  perform_plan(plan, writer);
  ASSERT_FALSE(writer.seen.empty());
  for (std::size_t i = 0; i < writer.seen.size(); ++i) {
    EXPECT_EQ(writer.seen[i], plan[i].priority.cls);
  }
}

TEST(PerformPlan, StopsAtTheFirstFailure) {
  const std::vector<PlannedWrite> plan = Scenario().plan();
  for (const std::string& failing : describe(plan)) {
    if (failing.starts_with("event")) continue;   // best effort: never fails
    if (failing.starts_with("start run")) break;  // below; what follows it is left
    ScriptedWriter writer;
    writer.fail_at = failing;
    const PlanOutcome outcome = perform_plan(plan, writer);
    EXPECT_FALSE(outcome.completed) << failing;
    ASSERT_FALSE(writer.calls.empty());
    EXPECT_EQ(writer.calls.back(), failing) << "nothing after the failed write";
    EXPECT_EQ(outcome.performed, writer.calls.size() - 1) << failing;
  }
}

// A Job that cannot be made now must not hold back the count of the runs
// before it: every other write is still performed, and the pass fails.
TEST(PerformPlan, AFailedStartDoesNotStopTheWritesAfterIt) {
  for (bool start_first : {true, false}) {
    Scenario s;
    if (start_first) s.d.coalesce.clear();
    const std::vector<PlannedWrite> plan = s.plan();
    ScriptedWriter writer;
    writer.fail_at = "start run r-q1";
    const PlanOutcome outcome = perform_plan(plan, writer);
    EXPECT_FALSE(outcome.completed);
    EXPECT_FALSE(outcome.rest_left);
    EXPECT_EQ(writer.calls, describe(plan)) << "every write was tried";
    EXPECT_EQ(outcome.performed, plan.size() - 1);
  }
}

TEST(PerformPlan, RunWhoseNameIsTakenIsNotStarted) {
  Scenario s;
  s.d.start_run = "bot-invoke-1";  // the manual run created in this pass
  ScriptedWriter writer;
  writer.name_taken = "bot-invoke-1";
  const PlanOutcome outcome = perform_plan(s.plan(), writer);
  EXPECT_TRUE(outcome.completed);
  EXPECT_THAT(writer.calls, Contains("invoke run bot-invoke-1"));
  EXPECT_THAT(writer.calls, Not(Contains("start run bot-invoke-1")));
  EXPECT_THAT(writer.calls, Contains("delete run r-old"));  // the rest still happens
}

// The slot's run made Queued when its Job was not: the writes after it go
// on (they must not wait for a Job a quota refuses) and the pass fails.
// Neither made: the pass stops before the agent status records the slot.
TEST(PerformPlan, ASlotRunStartThatMadeNoJobGoesOnOnlyWhenTheRunWasMade) {
  struct SlotWriter : ScriptedWriter {
    WriteResult slot_result = WriteResult::kStartFailed;
    WriteResult start_slot_run(const RunRequest& q) override {
      calls.push_back("start slot run " + q.name);
      return slot_result;
    }
  };
  Scenario s;
  s.d.start_run = "bot-1714565400";
  const std::vector<PlannedWrite> plan = s.plan();
  SlotWriter made_run;
  PlanOutcome outcome = perform_plan(plan, made_run);
  EXPECT_FALSE(outcome.completed);
  EXPECT_THAT(made_run.calls, Contains("agent status"));
  SlotWriter made_nothing;
  made_nothing.slot_result = WriteResult::kFailed;
  outcome = perform_plan(plan, made_nothing);
  EXPECT_FALSE(outcome.completed);
  EXPECT_EQ(made_nothing.calls.back(), "start slot run bot-1714565400");
  EXPECT_THAT(made_nothing.calls, Not(Contains("agent status")));
}

TEST(PerformPlan, HeldBackStartIsReported) {
  ScriptedWriter writer;
  writer.hold_back = true;
  const PlanOutcome outcome = perform_plan(Scenario().plan(), writer);
  EXPECT_TRUE(outcome.completed);
  EXPECT_TRUE(outcome.start_held_back);
}

}  // namespace
}  // namespace hb::controllers
