// Every scheduling rule of docs/reference.md, decided by the pure Agent decision
// with a fake clock.
#include "controllers/agent/agent_decision.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "controllers/agent/mention_plan.h"
#include "controllers/schedule/run_name.h"
#include "controllers/spend/budget_hold.h"
#include "tests/unit/controllers/fixtures.h"

namespace hb::controllers {
namespace {

using namespace testing;

const TimePoint kCreated = at("2024-05-01T12:00:00Z");

TEST(AgentDecision, FirstHeartbeatOneIntervalAfterCreationNotAtOnce) {
  World w{agent()};
  AgentDecision d = w.step(kCreated);
  EXPECT_FALSE(d.create_run);
  EXPECT_EQ(d.status_json()["nextHeartbeatTime"], "2024-05-01T12:05:00Z");
  ASSERT_TRUE(d.requeue_at);
  EXPECT_EQ(*d.requeue_at, at("2024-05-01T12:05:00Z"));  // no polling: the slot itself
  EXPECT_EQ(d.status_json()["phase"], "Idle");

  d = w.step(at("2024-05-01T12:04:59Z"));
  EXPECT_FALSE(d.create_run);

  d = w.step(at("2024-05-01T12:05:00Z"));
  ASSERT_TRUE(d.create_run);
  EXPECT_EQ(created_run(w.agent, d)["metadata"]["name"], "bot-1714565100");
  EXPECT_EQ(created_run(w.agent, d)["spec"]["invocationSource"], "scheduler");
  EXPECT_EQ(created_run(w.agent, d)["spec"]["scheduledTime"], "2024-05-01T12:05:00Z");
  EXPECT_EQ(created_run(w.agent, d)["metadata"]["annotations"]["heartbeat.dev/agent-uid"],
            "uid-bot");
  EXPECT_FALSE(created_run(w.agent, d)["metadata"].contains("ownerReferences"));
  EXPECT_EQ(created_run(w.agent, d)["metadata"]["labels"]["heartbeat.dev/agent"], "bot");
  EXPECT_EQ(d.start_run, "bot-1714565100");
  EXPECT_EQ(d.status_json()["activeRun"], "bot-1714565100");
  EXPECT_EQ(d.status_json()["phase"], "Running");
  EXPECT_EQ(d.status_json()["lastScheduleTime"], "2024-05-01T12:05:00Z");
  EXPECT_EQ(d.status_json()["nextHeartbeatTime"], "2024-05-01T12:10:00Z");
}

TEST(AgentDecision, SlotsAreAnchoredNotDriftingWithRunLength) {
  World w{agent()};
  w.step(at("2024-05-01T12:05:00Z"));
  w.finish("bot-1714565100", at("2024-05-01T12:08:30Z"), 1.0);  // a 3.5-minute run
  AgentDecision d = w.step(at("2024-05-01T12:08:31Z"));
  EXPECT_FALSE(d.create_run);
  EXPECT_EQ(d.status_json()["nextHeartbeatTime"], "2024-05-01T12:10:00Z");
  d = w.step(at("2024-05-01T12:10:00Z"));
  ASSERT_TRUE(d.create_run);
  EXPECT_EQ(created_run(w.agent, d)["spec"]["scheduledTime"], "2024-05-01T12:10:00Z");
}

TEST(AgentDecision, AfterDowntimeOnlyTheMostRecentMissedSlotRunsNeverABurst) {
  World w{agent()};
  AgentDecision d = w.step(at("2024-05-01T13:02:00Z"));  // 12 slots due, 12:05 .. 13:00
  ASSERT_TRUE(d.create_run);
  EXPECT_EQ(created_run(w.agent, d)["spec"]["scheduledTime"], "2024-05-01T13:00:00Z");
  EXPECT_TRUE(has_event(d, "MissedSchedule"));
  EXPECT_EQ(d.status_json()["nextHeartbeatTime"], "2024-05-01T13:05:00Z");
  d = w.step(at("2024-05-01T13:02:01Z"));  // nothing more
  EXPECT_FALSE(d.create_run);
}

TEST(AgentDecision, MissedSlotOlderThanStartingDeadlineIsSkipped) {
  Json a = agent();
  a["spec"]["heartbeat"]["startingDeadlineSeconds"] = 60;
  World w{a};
  AgentDecision d = w.step(at("2024-05-01T13:02:00Z"));  // 13:00 is 120 s old
  EXPECT_FALSE(d.create_run);
  EXPECT_TRUE(has_event(d, "MissedSchedule"));
  EXPECT_EQ(*d.requeue_at, at("2024-05-01T13:05:00Z"));
  d = w.step(at("2024-05-01T13:05:30Z"));  // 30 s late: within the deadline
  ASSERT_TRUE(d.create_run);
  EXPECT_EQ(created_run(w.agent, d)["spec"]["scheduledTime"], "2024-05-01T13:05:00Z");
}

TEST(AgentDecision, CronScheduleInUtc) {
  Json a = agent();
  a["spec"]["heartbeat"].erase("interval");
  a["spec"]["heartbeat"]["schedule"] =
      "0 9 * * 1-5";  // weekdays 09:00 UTC; 2024-05-01 is a Wednesday
  World w{a};
  AgentDecision d = w.step(kCreated);
  EXPECT_EQ(d.status_json()["nextHeartbeatTime"], "2024-05-02T09:00:00Z");
  d = w.step(at("2024-05-02T09:00:00Z"));
  ASSERT_TRUE(d.create_run);
  w.finish(created_run(w.agent, d)["metadata"]["name"], at("2024-05-02T09:01:00Z"), 0);
  d = w.step(at("2024-05-02T09:01:00Z"));
  EXPECT_EQ(d.status_json()["nextHeartbeatTime"], "2024-05-03T09:00:00Z");
  d = w.step(at("2024-05-03T09:05:00Z"));  // Friday, five minutes late
  ASSERT_TRUE(d.create_run);
  w.finish(created_run(w.agent, d)["metadata"]["name"], at("2024-05-03T09:06:00Z"), 0);
  d = w.step(at("2024-05-03T09:06:00Z"));
  EXPECT_EQ(d.status_json()["nextHeartbeatTime"], "2024-05-06T09:00:00Z");  // skips the weekend
}

TEST(AgentDecision, CronImpossibleDateIsInvalidSpec) {
  Json a = agent();
  a["spec"]["heartbeat"].erase("interval");
  a["spec"]["heartbeat"]["schedule"] = "0 0 30 2 *";
  AgentDecision d = decide(a, {}, kCreated);
  EXPECT_FALSE(d.spec_errors.empty());
  EXPECT_EQ((*condition(d.status_json(), "SpecValid"))["status"], "False");
  EXPECT_NE(join_errors(d.spec_errors).find("spec.heartbeat.schedule"), std::string::npos);
}

TEST(AgentDecision, AtMostOneActiveAndOneQueuedRun) {
  World w{agent()};
  w.step(at("2024-05-01T12:05:00Z"));                    // runs 12:05
  AgentDecision d = w.step(at("2024-05-01T12:10:00Z"));  // still running: one queued
  ASSERT_TRUE(d.create_run);
  EXPECT_FALSE(d.start_run);
  EXPECT_EQ(d.status_json()["activeRun"], "bot-1714565100");
  d = w.step(at("2024-05-01T12:15:00Z"));  // a queued run exists: coalesce, never stack
  EXPECT_FALSE(d.create_run);
  EXPECT_FALSE(d.start_run);
  EXPECT_EQ(d.status_json()["lastScheduleTime"], "2024-05-01T12:15:00Z");
  EXPECT_EQ(w.runs.size(), 2u);
  // The queued run says why it waits.
  EXPECT_NE(d.queued_messages["bot-1714565400"].find("waiting for run bot-1714565100"),
            std::string::npos);
  // The active one ends: the queued one starts at once.
  w.finish("bot-1714565100", at("2024-05-01T12:16:00Z"), 1);
  d = w.step(at("2024-05-01T12:16:00Z"));
  EXPECT_EQ(d.start_run, "bot-1714565400");
  EXPECT_EQ(d.mark, std::vector<std::string>{"bot-1714565100"});
}

TEST(AgentDecision, ManualRunStartsWhenFreeAndWaitsWhenBusy) {
  World w{agent()};
  w.runs.push_back(run("bot-manual-x", "manual", std::nullopt, "2024-05-01T12:01:00Z"));
  AgentDecision d = w.step(at("2024-05-01T12:01:00Z"));
  EXPECT_EQ(d.start_run, "bot-manual-x");
  // A scheduled slot while the manual run is active queues behind it.
  d = w.step(at("2024-05-01T12:05:00Z"));
  ASSERT_TRUE(d.create_run);
  EXPECT_FALSE(d.start_run);
}

TEST(AgentDecision, DeterministicNameAdoptsAnExistingRunInsteadOfDuplicating) {
  Json a = agent();
  // The run for 12:05 exists (created before a crash), lastScheduleTime was never written.
  std::vector<Json> runs = {run("bot-1714565100", "scheduler", at("2024-05-01T12:05:00Z"))};
  AgentDecision d = decide(a, runs, at("2024-05-01T12:05:02Z"));
  EXPECT_FALSE(d.create_run);
  EXPECT_EQ(d.start_run, "bot-1714565100");
  EXPECT_EQ(d.status_json()["lastScheduleTime"], "2024-05-01T12:05:00Z");
}

TEST(AgentDecision, BoardPauseBlocksWithConditionAndEventThenResumes) {
  Json a = agent();
  a["spec"]["paused"] = true;
  World w{a};
  AgentDecision d = w.step(at("2024-05-01T12:05:00Z"));
  EXPECT_FALSE(d.create_run);
  EXPECT_EQ(d.status_json()["phase"], "Paused");
  EXPECT_EQ((*condition(d.status_json(), "Paused"))["status"], "True");
  EXPECT_EQ((*condition(d.status_json(), "Paused"))["reason"], "Paused");
  // A pause is the user's choice: still Ready, saying why nothing is scheduled.
  EXPECT_EQ((*condition(d.status_json(), "Ready"))["status"], "True");
  EXPECT_EQ((*condition(d.status_json(), "Ready"))["reason"], "Paused");
  EXPECT_EQ((*condition(d.status_json(), "Stalled"))["status"], "False");
  EXPECT_TRUE(has_event(d, "Paused"));
  EXPECT_FALSE(d.status_json().contains("nextHeartbeatTime"));
  EXPECT_FALSE(d.requeue_at &&
               *d.requeue_at < at("2024-06-01T00:00:00Z"));  // no polling while paused
  // The Event is not repeated on the next reconcile.
  d = w.step(at("2024-05-01T12:06:00Z"));
  EXPECT_FALSE(has_event(d, "Paused"));
  EXPECT_FALSE(d.status_changed);
  // A manual run waits Queued while paused.
  w.runs.push_back(run("bot-manual-1", "manual"));
  d = w.step(at("2024-05-01T12:07:00Z"));
  EXPECT_FALSE(d.start_run);
  EXPECT_NE(d.queued_messages["bot-manual-1"].find("spec.paused"), std::string::npos);
  // Unpause: the most recent slot (12:05) runs at once; the manual run waits its turn.
  w.agent["spec"]["paused"] = false;
  w.agent["metadata"]["generation"] = 2;
  d = w.step(at("2024-05-01T12:08:00Z"));
  EXPECT_TRUE(has_event(d, "Resumed"));
  EXPECT_EQ(d.start_run, "bot-manual-1");
  EXPECT_FALSE(d.create_run);  // one queued already, active one starting: the slot coalesces
  EXPECT_EQ((*condition(d.status_json(), "Ready"))["observedGeneration"], 2);
}

TEST(AgentDecision, PausedUntilBlocksAndClockJumpsBothWays) {
  Json a = agent();
  a["status"] = {{"pausedUntil", "2024-05-01T12:30:00Z"}};
  World w{a};
  AgentDecision d = w.step(at("2024-05-01T12:05:00Z"));
  EXPECT_FALSE(d.create_run);
  EXPECT_EQ((*condition(d.status_json(), "Paused"))["reason"], "PausedByAgent");
  EXPECT_EQ(d.status_json()["phase"], "Paused");
  EXPECT_EQ(*d.requeue_at, at("2024-05-01T12:30:00Z"));
  // The pause lifts at 12:30, where the 12:30 slot runs.
  EXPECT_EQ(d.status_json()["nextHeartbeatTime"], "2024-05-01T12:30:00Z");
  // The clock jumps forward past pausedUntil: the pause lifts.
  d = w.step(at("2024-05-01T12:41:00Z"));
  ASSERT_TRUE(d.create_run);
  EXPECT_EQ(created_run(w.agent, d)["spec"]["scheduledTime"], "2024-05-01T12:40:00Z");
  w.finish(created_run(w.agent, d)["metadata"]["name"], at("2024-05-01T12:42:00Z"), 0);
  w.step(at("2024-05-01T12:42:00Z"));
  // ... and back before it: the pause applies again, nothing is scheduled.
  d = w.step(at("2024-05-01T12:20:00Z"));
  EXPECT_FALSE(d.create_run);
  EXPECT_EQ((*condition(d.status_json(), "Paused"))["reason"], "PausedByAgent");
}

// pause_heartbeats holds scheduled heartbeats only (docs/reference.md): a manual or
// callback run starts during the pause, a queued scheduled run keeps waiting.
TEST(AgentDecision, PausedUntilHoldsScheduledRunsButNotManualOnes) {
  Json a = agent();
  a["status"] = {{"pausedUntil", "2024-05-01T12:30:00Z"}};
  World w{a};
  w.runs.push_back(
      run("bot-1714564800", "scheduler", at("2024-05-01T12:00:00Z"), "2024-05-01T12:00:00Z"));
  w.runs.push_back(run("bot-manual-1", "manual", std::nullopt, "2024-05-01T12:01:00Z"));
  AgentDecision d = w.step(at("2024-05-01T12:02:00Z"));
  EXPECT_EQ(d.start_run, "bot-manual-1");
  EXPECT_EQ(d.status_json()["activeRun"], "bot-manual-1");
  EXPECT_NE(d.queued_messages["bot-1714564800"].find("pause_heartbeats"), std::string::npos);
  EXPECT_EQ((*condition(d.status_json(), "Paused"))["reason"], "PausedByAgent");
  // The manual run ends; the scheduled one still waits for the pause to lift.
  w.finish("bot-manual-1", at("2024-05-01T12:03:00Z"), 0);
  d = w.step(at("2024-05-01T12:03:00Z"));
  EXPECT_FALSE(d.start_run);
  EXPECT_FALSE(d.create_run);
  d = w.step(at("2024-05-01T12:30:00Z"));
  EXPECT_EQ(d.start_run, "bot-1714564800");
}

TEST(AgentDecision, BoardPauseStillHoldsManualRuns) {
  Json a = agent();
  a["spec"]["paused"] = true;
  a["status"] = {{"pausedUntil", "2024-05-01T12:30:00Z"}};
  World w{a};
  w.runs.push_back(run("bot-manual-1", "manual", std::nullopt, "2024-05-01T12:01:00Z"));
  AgentDecision d = w.step(at("2024-05-01T12:02:00Z"));
  EXPECT_FALSE(d.start_run);
  EXPECT_NE(d.queued_messages["bot-manual-1"].find("spec.paused"), std::string::npos);
}

TEST(AgentDecision, PauseHeartbeatsResultMovesTheNextSlot) {
  Json a = agent();
  a["spec"]["heartbeat"]["startingDeadlineSeconds"] = 30;
  World w{a};
  w.step(at("2024-05-01T12:05:00Z"));
  // The run asked for a 17-minute pause: until 12:23.
  w.finish("bot-1714565100", at("2024-05-01T12:06:00Z"), 2, at("2024-05-01T12:23:00Z"));
  AgentDecision d = w.step(at("2024-05-01T12:06:00Z"));
  EXPECT_EQ(d.status_json()["pausedUntil"], "2024-05-01T12:23:00Z");
  // 12:20 is more than 30 s before 12:23, so the next heartbeat is the 12:25 slot.
  EXPECT_EQ(d.status_json()["nextHeartbeatTime"], "2024-05-01T12:25:00Z");
  EXPECT_EQ(*d.requeue_at, at("2024-05-01T12:23:00Z"));
  d = w.step(at("2024-05-01T12:10:00Z"));
  EXPECT_FALSE(d.create_run);
  d = w.step(at("2024-05-01T12:23:00Z"));  // lifted; 12:20 too late
  EXPECT_FALSE(d.create_run);
  d = w.step(at("2024-05-01T12:25:00Z"));
  ASSERT_TRUE(d.create_run);
}

TEST(AgentDecision, MonthlyBudgetBlocksWithConditionEventAndResetsNextMonth) {
  Json a = agent("bot", "2024-05-31T23:00:00Z");
  a["spec"]["budget"] = {{"monthlyCents", 10}, {"resume", "NextPeriod"}};
  World w{a};
  w.step(at("2024-05-31T23:05:00Z"));
  w.finish("bot-1717196700", at("2024-05-31T23:06:00Z"), 12.5);
  AgentDecision d = w.step(at("2024-05-31T23:06:00Z"));
  EXPECT_EQ(d.status_json()["spend"]["cents"], 12.5);
  EXPECT_EQ(d.status_json()["spend"]["period"], "2024-05");
  EXPECT_EQ((*condition(d.status_json(), "BudgetExceeded"))["status"], "True");
  EXPECT_EQ(d.status_json()["phase"], "BudgetExceeded");
  EXPECT_TRUE(has_event(d, "BudgetExceeded"));
  EXPECT_EQ(*d.requeue_at, at("2024-06-01T00:00:00Z"));
  d = w.step(at("2024-05-31T23:10:00Z"));
  EXPECT_FALSE(d.create_run);
  // Month rollover: spend resets, the most recent slot (00:00) runs at once.
  d = w.step(at("2024-06-01T00:00:00Z"));
  ASSERT_TRUE(d.create_run);
  EXPECT_EQ(d.status_json()["spend"]["period"], "2024-06");
  EXPECT_EQ(d.status_json()["spend"]["cents"], 0);
  EXPECT_EQ((*condition(d.status_json(), "BudgetExceeded"))["status"], "False");
}

// status.spendToday: the agent's day in its own zone, from the durable
// ledger; kept without a write while the day lasts, rolled off after it.
TEST(AgentDecision, TodaysSpendIsShownForTheAgentsDayAndRolledOffAfterIt) {
  Json a = agent();
  a["spec"]["heartbeat"].erase("interval");
  a["spec"]["heartbeat"]["schedule"] = "30 8 * * *";  // 08:30 in Tokyo is 23:30 UTC the day before
  a["spec"]["heartbeat"]["timeZone"] = "Asia/Tokyo";
  World w{a};
  w.ledger = LedgerRecord{};
  AgentDecision d = w.step(kCreated);
  EXPECT_FALSE(d.status_json().contains("spendToday"));  // nothing spent: nothing shown
  d = w.step(at("2024-05-01T23:30:00Z"));
  ASSERT_TRUE(d.create_run);
  const std::string first = created_run(w.agent, d)["metadata"]["name"];
  w.finish(first, at("2024-05-01T23:31:00Z"), 2.5);
  d = w.step(at("2024-05-01T23:31:00Z"));
  // Tokyo's 2 May, though UTC's 1 May.
  EXPECT_EQ(d.status_json()["spendToday"],
            (Json{{"day", "2024-05-02"}, {"timeZone", "Asia/Tokyo"}, {"cents", 2.5}}));
  d = w.step(at("2024-05-02T03:00:00Z"));
  EXPECT_FALSE(d.status_changed);  // the same day: nothing to write
  EXPECT_EQ(d.status_json()["spendToday"]["cents"], 2.5);
  d = w.step(at("2024-05-02T15:00:01Z"));  // Tokyo's 3 May has begun
  EXPECT_TRUE(d.status_changed);
  EXPECT_FALSE(d.status_json().contains("spendToday"));
  EXPECT_EQ(d.status_json()["spend"]["cents"], 2.5);  // the month keeps it
}

// The pass that counts the run which spends the day holds the next one
// already, not only the pass after it (which reads the record).
TEST(AgentDecision, TheRunThatSpendsTheDayHoldsTheNextInTheSamePass) {
  Json a = agent();
  a["spec"]["budget"] = {{"dailyCents", 2}};
  World w{a};
  w.ledger = LedgerRecord{};
  w.runs.push_back(run("bot-manual-1", "manual", std::nullopt, "2024-05-01T12:01:00Z"));
  AgentDecision d = w.step(at("2024-05-01T12:01:00Z"));
  ASSERT_EQ(d.start_run, "bot-manual-1");
  w.runs.push_back(run("bot-manual-2", "manual", std::nullopt, "2024-05-01T12:01:30Z"));
  w.finish("bot-manual-1", at("2024-05-01T12:02:00Z"), 2.5);
  d = w.step(at("2024-05-01T12:02:00Z"));
  EXPECT_FALSE(d.start_run) << "started on a spent day";
  EXPECT_EQ((*condition(d.status_json(), "BudgetExceeded"))["reason"], "DailyBudgetExceeded");
}

const Event* event_of(const AgentDecision& d, const std::string& reason) {
  for (const Event& e : d.events) {
    if (e.reason == reason) return &e;
  }
  return nullptr;
}

// A HeartbeatPolicy's team budget spent: no run, condition BudgetExceeded
// with reason PolicyBudgetExceeded naming the policy, an Event; a budget
// raised (or the policy gone) lets the next slot run.
TEST(AgentDecision, ASpentTeamBudgetStopsTheAgentUntilRaised) {
  Json a = agent("bot", "2024-05-10T10:00:00Z");
  World w{a};
  w.policy_budgets = {{"team-a", 100, 100, "2024-05"}};
  AgentDecision d = w.step(at("2024-05-10T10:05:00Z"));
  EXPECT_FALSE(d.create_run);
  const Json status = d.status_json();
  const Json* budget = condition(status, "BudgetExceeded");
  ASSERT_NE(budget, nullptr);
  EXPECT_EQ((*budget)["status"], "True");
  EXPECT_EQ((*budget)["reason"], "PolicyBudgetExceeded");
  EXPECT_THAT((*budget)["message"].get<std::string>(),
              ::testing::HasSubstr("HeartbeatPolicy team-a"));
  EXPECT_EQ(status["phase"], "BudgetExceeded");
  ASSERT_NE(event_of(d, "BudgetExceeded"), nullptr);
  EXPECT_THAT(event_of(d, "BudgetExceeded")->message, ::testing::HasSubstr("team-a"));
  EXPECT_FALSE(status.contains("budgetHold"));  // no person needed: the month lifts it
  w.policy_budgets = {{"team-a", 200, 100, "2024-05"}};
  d = w.step(at("2024-05-10T10:06:00Z"));
  ASSERT_TRUE(d.create_run);
  EXPECT_EQ((*condition(d.status_json(), "BudgetExceeded"))["status"], "False");
}

// A paused HeartbeatPolicy (the kill switch) over the agent: no scheduled
// run is made, manual and callback runs wait Queued; condition Paused with
// reason PolicyPaused naming the policy, one Event when the hold begins;
// no next heartbeat (a person lifts it). Resumed, the queued runs go on.
TEST(AgentDecision, APausedPolicyHoldsScheduledManualAndCallbackRuns) {
  World w{agent()};
  w.policy_budgets = {{.policy = "team-a", .period = "2024-05", .ns = "ns", .paused = true}};
  AgentDecision d = w.step(at("2024-05-01T12:05:00Z"));  // the first slot is due
  EXPECT_FALSE(d.create_run);
  EXPECT_FALSE(d.start_run);
  Json status = d.status_json();
  const Json* paused = condition(status, "Paused");
  ASSERT_NE(paused, nullptr);
  EXPECT_EQ((*paused)["status"], "True");
  EXPECT_EQ((*paused)["reason"], "PolicyPaused");
  EXPECT_THAT((*paused)["message"].get<std::string>(),
              ::testing::HasSubstr("HeartbeatPolicy ns/team-a"));
  EXPECT_EQ((*condition(status, "Ready"))["status"], "True");
  EXPECT_EQ((*condition(status, "Ready"))["reason"], "PolicyPaused");
  EXPECT_EQ(status["phase"], "Paused");
  EXPECT_FALSE(status.contains("nextHeartbeatTime"));
  EXPECT_FALSE(d.requeue_at && *d.requeue_at < at("2024-06-01T00:00:00Z"));
  const Event* e = event_of(d, "PolicyPaused");
  ASSERT_NE(e, nullptr);
  EXPECT_THAT(e->message, ::testing::HasSubstr("HeartbeatPolicy ns/team-a"));
  d = w.step(at("2024-05-01T12:06:00Z"));
  EXPECT_EQ(event_of(d, "PolicyPaused"), nullptr) << "told once";
  EXPECT_FALSE(d.status_changed);
  // A manual and a callback run wait Queued, told why.
  w.runs.push_back(run("bot-manual-1", "manual", std::nullopt, "2024-05-01T12:06:00Z"));
  w.runs.push_back(run("bot-cb-1", "callback", std::nullopt, "2024-05-01T12:06:30Z"));
  d = w.step(at("2024-05-01T12:07:00Z"));
  EXPECT_FALSE(d.start_run);
  EXPECT_FALSE(d.create_run);
  EXPECT_THAT(d.queued_messages["bot-manual-1"], ::testing::HasSubstr("HeartbeatPolicy ns/team-a"));
  EXPECT_THAT(d.queued_messages["bot-cb-1"], ::testing::HasSubstr("HeartbeatPolicy ns/team-a"));
  d = w.step(at("2024-05-01T12:09:00Z"));
  EXPECT_FALSE(d.start_run);
  // Resumed: the manual run starts, then the callback run; the Event says so.
  w.policy_budgets[0].paused = false;
  d = w.step(at("2024-05-01T12:09:30Z"));
  EXPECT_EQ(d.start_run, "bot-manual-1");
  EXPECT_TRUE(has_event(d, "Resumed"));
  EXPECT_EQ((*condition(d.status_json(), "Paused"))["status"], "False");
  w.finish("bot-manual-1", at("2024-05-01T12:09:40Z"), 0);
  d = w.step(at("2024-05-01T12:09:40Z"));
  EXPECT_EQ(d.start_run, "bot-cb-1");
}

// The controls: the same inputs with the policy not paused start each run.
TEST(AgentDecision, AnUnpausedPolicyHoldsNoRun) {
  World w{agent()};
  w.policy_budgets = {{.policy = "team-a",
                       .period = "2024-05",
                       .ns = "ns",
                       .paused = false,
                       .cancel_running = true}};
  AgentDecision d = w.step(at("2024-05-01T12:05:00Z"));
  ASSERT_TRUE(d.create_run);
  EXPECT_EQ(d.start_run, d.create_run->name);
  for (const char* source : {"manual", "callback"}) {
    World other{agent()};
    other.policy_budgets = w.policy_budgets;
    other.runs.push_back(run("bot-x", source, std::nullopt, "2024-05-01T12:01:00Z"));
    EXPECT_EQ(other.step(at("2024-05-01T12:01:00Z")).start_run, "bot-x") << source;
  }
}

// A policy's pause over a board pause the agent already had: the condition
// names the policy and its Event is told (the hold the author cannot lift).
TEST(AgentDecision, APolicyPauseOverABoardPauseIsTold) {
  Json a = agent();
  a["spec"]["paused"] = true;
  World w{a};
  AgentDecision d = w.step(at("2024-05-01T12:05:00Z"));
  EXPECT_EQ((*condition(d.status_json(), "Paused"))["reason"], "Paused");
  w.policy_budgets = {{.policy = "team-a", .period = "2024-05", .ns = "ns", .paused = true}};
  d = w.step(at("2024-05-01T12:06:00Z"));
  EXPECT_EQ((*condition(d.status_json(), "Paused"))["reason"], "PolicyPaused");
  ASSERT_NE(event_of(d, "PolicyPaused"), nullptr);
  d = w.step(at("2024-05-01T12:07:00Z"));
  EXPECT_EQ(event_of(d, "PolicyPaused"), nullptr);
  // The policy resumes; the board pause still holds, told by its own reason.
  w.policy_budgets.clear();
  d = w.step(at("2024-05-01T12:08:00Z"));
  EXPECT_EQ((*condition(d.status_json(), "Paused"))["reason"], "Paused");
  EXPECT_FALSE(d.create_run);
}

// The design's budget stop: spent, the agent waits for a person, across the
// month boundary; a new heartbeat.dev/resume value lets it go.
TEST(AgentDecision, ABudgetStopWaitsForAPersonAcrossTheMonth) {
  Json a = agent("bot", "2024-05-31T23:00:00Z");
  a["spec"]["budget"] = {{"monthlyCents", 10}};  // resume: Manual by default
  World w{a};
  w.step(at("2024-05-31T23:05:00Z"));
  w.finish("bot-1717196700", at("2024-05-31T23:06:00Z"), 12.5);
  AgentDecision d = w.step(at("2024-05-31T23:06:00Z"));
  const Json status = d.status_json();
  const Json* budget = condition(status, "BudgetExceeded");
  EXPECT_EQ((*budget)["status"], "True");
  EXPECT_EQ((*budget)["reason"], "AwaitingApproval");
  EXPECT_THAT((*budget)["message"].get<std::string>(),
              ::testing::HasSubstr("heartbeat.dev/resume"));
  EXPECT_TRUE(has_event(d, "BudgetExceeded"));
  EXPECT_EQ(d.status_json()["budgetHold"]["period"], "2024-05");
  EXPECT_EQ(d.status_json()["budgetHold"]["budgetCents"], 10);
  EXPECT_FALSE(d.requeue_at && *d.requeue_at == at("2024-06-01T00:00:00Z"));  // no reset
  d = w.step(at("2024-05-31T23:07:00Z"));
  EXPECT_FALSE(d.status_changed);  // the hold is stored as it was read back
  EXPECT_FALSE(d.status_json().contains("nextHeartbeatTime"));  // a person decides when
  d = w.step(at("2024-05-31T23:40:00Z"));
  EXPECT_FALSE(d.status_changed);  // nothing moves while it waits (no polling either)
  EXPECT_FALSE(d.requeue_at);

  // The month turns: spend resets, the stop stays.
  d = w.step(at("2024-06-01T00:00:00Z"));
  EXPECT_FALSE(d.create_run);
  EXPECT_EQ(d.status_json()["spend"]["cents"], 0);
  EXPECT_EQ(d.status_json()["phase"], "BudgetExceeded");
  EXPECT_EQ((*condition(d.status_json(), "BudgetExceeded"))["reason"], "AwaitingApproval");
  EXPECT_THAT((*condition(d.status_json(), "BudgetExceeded"))["message"].get<std::string>(),
              ::testing::HasSubstr("the 10 cents budgeted for 2024-05 were spent"));

  // A manual run waits too.
  w.agent["metadata"]["annotations"][kAnnotationInvoke] = "look now";
  d = w.step(at("2024-06-01T00:01:00Z"));
  ASSERT_TRUE(d.invoke_run);
  d = w.step(at("2024-06-01T00:01:01Z"));
  EXPECT_FALSE(d.start_run);

  // A person says go: the queued manual run starts, the stop is released once.
  w.agent["metadata"]["annotations"][kAnnotationResume] = "approved by ana";
  d = w.step(at("2024-06-01T00:02:00Z"));
  EXPECT_TRUE(d.start_run);
  EXPECT_TRUE(has_event(d, "BudgetResumed"));
  EXPECT_EQ((*condition(d.status_json(), "BudgetExceeded"))["status"], "False");
  EXPECT_FALSE(d.status_json().contains("budgetHold"));  // May's released hold is history
  d = w.step(at("2024-06-01T00:02:01Z"));
  EXPECT_FALSE(has_event(d, "BudgetResumed"));
}

// The annotation stays (Git may hold it): the next stop records its value,
// so only another value releases that one.
TEST(AgentDecision, TheResumeAnnotationIsIdempotentByValue) {
  Json a = agent();
  a["spec"]["budget"] = {{"monthlyCents", 10}};
  a["metadata"]["annotations"][kAnnotationResume] = "v1";
  a["status"] = {{"spend", {{"period", "2024-05"}, {"cents", 10}}}};
  World w{a};
  AgentDecision d = w.step(at("2024-05-01T12:05:00Z"));
  EXPECT_FALSE(d.create_run);
  EXPECT_EQ(d.status_json()["budgetHold"]["resumeValueHash"], long_hash("v1"));
  d = w.step(at("2024-06-01T00:00:00Z"));
  EXPECT_FALSE(d.create_run);  // "v1" is the value the stop saw
  w.agent["metadata"]["annotations"][kAnnotationResume] = "v2";
  d = w.step(at("2024-06-01T00:00:10Z"));
  EXPECT_TRUE(d.create_run);
}

// Released in its own month, still over budget: the month's block stands
// (resuming when it turns), and the same stop is not held again.
TEST(AgentDecision, AResumeWithinTheMonthWaitsForTheMonthNotForAnotherPerson) {
  Json a = agent();
  a["spec"]["budget"] = {{"monthlyCents", 10}};
  a["status"] = {{"spend", {{"period", "2024-05"}, {"cents", 11}}}};
  World w{a};
  w.step(at("2024-05-10T12:00:00Z"));
  w.agent["metadata"]["annotations"][kAnnotationResume] = "ok";
  AgentDecision d = w.step(at("2024-05-10T12:01:00Z"));
  EXPECT_TRUE(has_event(d, "BudgetResumed"));
  EXPECT_FALSE(d.create_run);
  EXPECT_EQ((*condition(d.status_json(), "BudgetExceeded"))["reason"], "BudgetExceeded");
  EXPECT_EQ(d.status_json()["budgetHold"]["releasedBy"], "ResumeAnnotation");
  EXPECT_EQ(*d.requeue_at, at("2024-06-01T00:00:00Z"));
  d = w.step(at("2024-05-20T12:00:00Z"));
  EXPECT_EQ(d.status_json()["budgetHold"]["releasedBy"], "ResumeAnnotation");
  d = w.step(at("2024-06-01T00:00:00Z"));
  EXPECT_TRUE(d.create_run);
}

TEST(AgentDecision, RaisingTheBudgetReleasesTheStopAndANewOneIsHeldAgain) {
  Json a = agent();
  a["spec"]["budget"] = {{"monthlyCents", 10}};
  a["status"] = {{"spend", {{"period", "2024-05"}, {"cents", 12}}}};
  World w{a};
  AgentDecision d = w.step(at("2024-05-01T12:05:00Z"));
  EXPECT_FALSE(d.create_run);
  w.agent["spec"]["budget"]["monthlyCents"] = 20;
  d = w.step(at("2024-05-01T12:06:00Z"));
  EXPECT_TRUE(d.create_run);
  ASSERT_TRUE(event_of(d, "BudgetResumed"));
  EXPECT_THAT(event_of(d, "BudgetResumed")->message, ::testing::HasSubstr("raised to 20"));
  w.finish("bot-1714565100", at("2024-05-01T12:07:00Z"), 9);
  d = w.step(at("2024-05-01T12:07:00Z"));
  EXPECT_EQ(d.status_json()["budgetHold"]["budgetCents"], 20);
  EXPECT_FALSE(d.status_json()["budgetHold"].contains("releasedAt"));
  EXPECT_EQ((*condition(d.status_json(), "BudgetExceeded"))["reason"], "AwaitingApproval");
}

TEST(AgentDecision, NextPeriodReleasesAStandingStop) {
  Json a = agent();
  a["spec"]["budget"] = {{"monthlyCents", 10}};
  a["status"] = {{"spend", {{"period", "2024-04"}, {"cents", 12}}}};
  World w{a};
  w.step(at("2024-04-30T12:00:00Z"));
  AgentDecision d = w.step(at("2024-05-01T12:05:00Z"));
  EXPECT_FALSE(d.create_run);
  w.agent["spec"]["budget"]["resume"] = "NextPeriod";
  d = w.step(at("2024-05-01T12:05:01Z"));
  EXPECT_TRUE(d.create_run);
  EXPECT_TRUE(has_event(d, "BudgetResumed"));
}

TEST(AgentDecision, AnUnknownBudgetResumeNamesTheChoices) {
  Json a = agent();
  a["spec"]["budget"] = {{"monthlyCents", 10}, {"resume", "Auto"}};
  AgentDecision d = decide(a, {}, at("2024-05-01T12:05:00Z"));
  ASSERT_EQ(d.spec_errors.size(), 1u);
  EXPECT_THAT(d.spec_errors[0], ::testing::HasSubstr("spec.budget.resume \"Auto\": use Manual"));
}

// One meaning for 0, as the CRD says: no monthly limit (spec.paused stops runs).
TEST(AgentDecision, AZeroMonthlyBudgetIsUnlimited) {
  Json a = agent();
  a["spec"]["budget"] = {{"monthlyCents", 0}};
  a["status"] = {{"spend", {{"period", "2024-05"}, {"cents", 1000}}}};
  AgentDecision d = decide(a, {}, at("2024-05-01T12:05:00Z"));
  EXPECT_TRUE(d.create_run);
  EXPECT_EQ((*condition(d.status_json(), "BudgetExceeded"))["status"], "False");
}

TEST(AgentDecision, RunFinishingInOldMonthIsRecordedButNotCountedInNewMonth) {
  Json a = agent("bot", "2024-05-31T23:00:00Z");
  World w{a};
  w.step(at("2024-05-31T23:55:00Z"));
  w.finish("bot-1717199700", at("2024-05-31T23:59:00Z"), 7);
  AgentDecision d = w.step(at("2024-06-01T00:00:30Z"));  // counted after midnight
  EXPECT_EQ(d.status_json()["spend"]["period"], "2024-06");
  EXPECT_EQ(d.status_json()["spend"]["cents"], 0);
  EXPECT_EQ(d.status_json()["recentRuns"][0]["name"], "bot-1717199700");
}

// The design's empty heartbeat.md: the slot passes without a run or a Job,
// once the prompt says something again heartbeats resume.
TEST(AgentDecision, AnEmptyPromptSkipsTheSlotWithoutARun) {
  Json a = agent();
  a["spec"]["heartbeat"]["prompt"] = " \n\t ";
  World w{a};
  AgentDecision d = w.step(at("2024-05-01T12:05:00Z"));
  EXPECT_TRUE(d.spec_errors.empty()) << join_errors(d.spec_errors);
  EXPECT_FALSE(d.create_run);
  EXPECT_FALSE(d.start_run);
  EXPECT_TRUE(w.runs.empty());
  EXPECT_EQ(d.status_json()["lastScheduleTime"], "2024-05-01T12:05:00Z");
  EXPECT_EQ(d.status_json()["nextHeartbeatTime"], "2024-05-01T12:10:00Z");
  EXPECT_EQ(d.status_json()["lastSkippedHeartbeat"]["scheduledTime"], "2024-05-01T12:05:00Z");
  EXPECT_EQ(d.status_json()["lastSkippedHeartbeat"]["reason"], "PromptEmpty");
  ASSERT_NE(event_of(d, "HeartbeatSkipped"), nullptr);
  EXPECT_FALSE(event_of(d, "HeartbeatSkipped")->warning);  // a choice, not a fault
  EXPECT_EQ((*condition(d.status_json(), "Ready"))["status"], "True");
  EXPECT_EQ((*condition(d.status_json(), "Ready"))["reason"], "PromptEmpty");
  EXPECT_EQ((*condition(d.status_json(), "Stalled"))["status"], "False");
  EXPECT_EQ(d.status_json()["phase"], "Idle");
  // The next slot is skipped too, without another Event.
  d = w.step(at("2024-05-01T12:10:00Z"));
  EXPECT_FALSE(d.create_run);
  EXPECT_EQ(d.status_json()["lastSkippedHeartbeat"]["scheduledTime"], "2024-05-01T12:10:00Z");
  EXPECT_FALSE(has_event(d, "HeartbeatSkipped"));
  // A prompt again: the skip is cleared at once, the next slot runs.
  w.agent["spec"]["heartbeat"]["prompt"] = "Check the farm.";
  d = w.step(at("2024-05-01T12:11:00Z"));
  EXPECT_FALSE(d.status_json().contains("lastSkippedHeartbeat"));
  EXPECT_EQ((*condition(d.status_json(), "Ready"))["reason"], "Ready");
  d = w.step(at("2024-05-01T12:15:00Z"));
  ASSERT_TRUE(d.create_run);
  EXPECT_EQ(d.start_run, d.create_run->name);
}

// A promptFrom ConfigMap or key that does not exist: the slot is skipped
// (no run, no Job), the Agent is Stalled naming it, and the ConfigMap is
// read again every kPromptRecheckSeconds until it is there.
TEST(AgentDecision, AMissingPromptConfigMapSkipsAndStallsUntilItIsThere) {
  Json a = agent();
  a["spec"]["heartbeat"].erase("prompt");
  a["spec"]["heartbeat"]["promptFrom"] = {
      {"configMapKeyRef", {{"name", "prompts"}, {"key", "heartbeat.md"}}}};
  World w{a};
  w.prompt_from_gap = PromptGap{kReasonPromptNotFound, "ConfigMap \"prompts\" does not exist"};
  AgentDecision d = w.step(at("2024-05-01T12:04:00Z"));  // no slot due: nothing read, nothing said
  EXPECT_FALSE(d.status_json().contains("lastSkippedHeartbeat"));
  d = w.step(at("2024-05-01T12:05:00Z"));
  EXPECT_FALSE(d.create_run);
  EXPECT_TRUE(w.runs.empty());
  EXPECT_EQ(d.status_json()["lastSkippedHeartbeat"]["reason"], "PromptNotFound");
  ASSERT_NE(event_of(d, "HeartbeatSkipped"), nullptr);
  EXPECT_TRUE(event_of(d, "HeartbeatSkipped")->warning);
  EXPECT_NE(event_of(d, "HeartbeatSkipped")->message.find("\"prompts\""), std::string::npos);
  EXPECT_EQ((*condition(d.status_json(), "Stalled"))["status"], "True");
  EXPECT_EQ((*condition(d.status_json(), "Stalled"))["reason"], "PromptNotFound");
  EXPECT_EQ((*condition(d.status_json(), "Ready"))["status"], "False");
  ASSERT_TRUE(d.requeue_at);
  EXPECT_EQ(*d.requeue_at, at("2024-05-01T12:06:00Z"));
  // Still missing a minute later: the skip stands.
  d = w.step(at("2024-05-01T12:06:00Z"));
  EXPECT_EQ(d.status_json()["lastSkippedHeartbeat"]["scheduledTime"], "2024-05-01T12:05:00Z");
  EXPECT_FALSE(has_event(d, "HeartbeatSkipped"));
  // Created: the next read clears it and the Agent resumes before the next slot.
  w.prompt_from_gap.reset();
  d = w.step(at("2024-05-01T12:07:00Z"));
  EXPECT_FALSE(d.status_json().contains("lastSkippedHeartbeat"));
  EXPECT_EQ((*condition(d.status_json(), "Stalled"))["status"], "False");
  EXPECT_TRUE(has_event(d, "Resumed"));
  EXPECT_EQ(*d.requeue_at, at("2024-05-01T12:10:00Z"));
  d = w.step(at("2024-05-01T12:10:00Z"));
  ASSERT_TRUE(d.create_run);
}

TEST(AgentDecision, PromptFieldRules) {
  Json neither = agent();
  neither["spec"]["heartbeat"].erase("prompt");
  AgentDecision d = decide(neither, {}, at("2024-05-01T12:05:00Z"));
  EXPECT_NE(join_errors(d.spec_errors).find("spec.heartbeat.prompt: is required"),
            std::string::npos);
  Json both = agent();
  both["spec"]["heartbeat"]["promptFrom"] = {{"configMapKeyRef", {{"name", "p"}, {"key", "k"}}}};
  d = decide(both, {}, at("2024-05-01T12:05:00Z"));
  EXPECT_NE(join_errors(d.spec_errors).find("not both"), std::string::npos);
  // An empty prompt next to promptFrom is the field left at its default.
  both["spec"]["heartbeat"]["prompt"] = "";
  d = decide(both, {}, at("2024-05-01T12:05:00Z"));
  EXPECT_TRUE(d.spec_errors.empty()) << join_errors(d.spec_errors);
}

TEST(AgentDecision, SpecValidChecksTheSchemaCannotDo) {
  Json both = agent();
  both["spec"]["heartbeat"]["schedule"] = "*/5 * * * *";
  AgentDecision d = decide(both, {}, at("2024-05-01T12:05:00Z"));
  EXPECT_FALSE(d.spec_errors.empty());
  EXPECT_FALSE(d.create_run);
  EXPECT_EQ(d.status_json()["phase"], "Invalid");
  EXPECT_NE(join_errors(d.spec_errors).find("spec.heartbeat"), std::string::npos);
  EXPECT_TRUE(has_event(d, "InvalidSpec"));

  Json provider = agent();
  provider["spec"]["model"]["provider"] = "gemini";
  d = decide(provider, {}, at("2024-05-01T12:05:00Z"));
  EXPECT_NE(join_errors(d.spec_errors).find("spec.model.provider \"gemini\""), std::string::npos);
  EXPECT_FALSE(d.create_run);

  EXPECT_EQ((*condition(d.status_json(), "SpecValid"))["reason"], "InvalidSpec");
  EXPECT_EQ((*condition(d.status_json(), "SpecValid"))["observedGeneration"], 1);

  Json short_interval = agent();
  short_interval["spec"]["heartbeat"]["interval"] = "10s";
  d = decide(short_interval, {}, at("2024-05-01T12:05:00Z"));
  EXPECT_NE(join_errors(d.spec_errors).find("spec.heartbeat.interval"), std::string::npos);

  Json command = agent();
  command["spec"]["runtime"]["mode"] = "command";
  d = decide(command, {}, at("2024-05-01T12:05:00Z"));
  EXPECT_NE(join_errors(d.spec_errors).find("spec.runtime.image"), std::string::npos);
  EXPECT_NE(join_errors(d.spec_errors).find("spec.runtime.command"), std::string::npos);
}

// Another's ConfigMap/Lease/Role named like this Agent's own: never adopted,
// the Agent says which object is in the way and starts nothing.
TEST(AgentDecision, AnObjectInTheWayIsNamedAndBlocksRuns) {
  Json a = agent();
  AgentDecisionInput in;
  in.agent = &a;
  const TimePoint now = at("2024-05-01T12:05:00Z");
  std::vector<Json> runs = {run("bot-manual-1", "manual")};
  in.runs = observe_all(runs, now);
  in.env.object_in_the_way = "ConfigMap default/bot-memory";
  in.now = now;
  AgentDecision d = decide_agent(in);
  EXPECT_FALSE(d.start_run);
  EXPECT_FALSE(d.create_run);
  const Json status = d.status_json();
  EXPECT_EQ((*condition(status, "SpecValid"))["status"], "False");
  EXPECT_EQ((*condition(status, "SpecValid"))["reason"], "ObjectInTheWay");
  EXPECT_EQ((*condition(status, "Ready"))["reason"], "ObjectInTheWay");
  EXPECT_EQ((*condition(status, "Stalled"))["status"], "True");
  EXPECT_EQ((*condition(status, "Stalled"))["reason"], "ObjectInTheWay");
  EXPECT_NE((*condition(status, "SpecValid"))["message"].get<std::string>().find(
                "ConfigMap default/bot-memory exists and is not owned by this Agent"),
            std::string::npos);
  EXPECT_TRUE(has_event(d, "ObjectInTheWay"));
}

// A missing API key (seen only as the kubelet's CreateContainerConfigError,
// never by reading the Secret) makes Ready False on the Agent until a newer
// run gets further; the spec itself stays valid and heartbeats keep coming.
TEST(AgentDecision, ANewestRunTheKubeletCouldNotConfigureMakesTheAgentNotReady) {
  const Json failed =
      with_status(run("bot-1", "scheduler", std::nullopt, "2024-05-01T12:05:00Z"),
                  {{"phase", "Failed"},
                   {"reason", "ContainerConfigError"},
                   {"message",
                    "the kubelet cannot start the runner: couldn't find key api-key in Secret "
                    "ns/llm"},
                   {"costRecorded", true}});
  AgentDecision d = decide(agent(), {failed}, at("2024-05-01T12:07:00Z"));
  Json status = d.status_json();
  EXPECT_EQ((*condition(status, "Ready"))["status"], "False");
  EXPECT_EQ((*condition(status, "Ready"))["reason"], "ContainerConfigError");
  EXPECT_EQ((*condition(status, "Stalled"))["reason"], "ContainerConfigError");
  EXPECT_THAT((*condition(status, "Ready"))["message"].get<std::string>(),
              ::testing::HasSubstr("run bot-1: the kubelet cannot start the runner: couldn't "
                                   "find key api-key in Secret ns/llm"));
  EXPECT_EQ((*condition(status, "SpecValid"))["status"], "True");

  const Json later =
      with_status(run("bot-2", "scheduler", std::nullopt, "2024-05-01T12:10:00Z"),
                  {{"phase", "Succeeded"}, {"reason", "Completed"}, {"costRecorded", true}});
  d = decide(agent(), {failed, later}, at("2024-05-01T12:11:00Z"));
  EXPECT_EQ((*condition(d.status_json(), "Ready"))["status"], "True");
}

TEST(AgentDecision, InvalidSpecKeepsManualRunsQueued) {
  World w{agent()};
  w.agent["spec"]["model"]["provider"] = "nope";
  w.runs.push_back(run("bot-manual-1", "manual"));
  AgentDecision d = w.step(at("2024-05-01T12:05:00Z"));
  EXPECT_FALSE(d.start_run);
  EXPECT_NE(d.queued_messages["bot-manual-1"].find("invalid"), std::string::npos);
}

TEST(AgentDecision, ConditionTransitionTimeKeptWhileStatusUnchanged) {
  World w{agent()};
  w.step(at("2024-05-01T12:01:00Z"));
  const std::string first = (*condition(w.agent["status"], "Ready"))["lastTransitionTime"];
  EXPECT_EQ(first, "2024-05-01T12:01:00Z");
  AgentDecision d = w.step(at("2024-05-01T12:02:00Z"));
  EXPECT_FALSE(d.status_changed);  // nothing new: no write
  EXPECT_EQ((*condition(d.status_json(), "Ready"))["lastTransitionTime"], first);
}

// The decision keeps stored fields that already say what it wants, and
// judges "changed" as a whole-status == of its own rendering would.
TEST(AgentDecision, SteadyStatusIsKeptAndChangeIsJudgedLikeEquality) {
  World w{agent()};
  w.step(at("2024-05-01T12:01:00Z"));
  const Json stored = w.agent["status"];
  AgentDecision d = w.step(at("2024-05-01T12:02:00Z"));
  EXPECT_FALSE(d.status_changed);
  EXPECT_TRUE(same_json(d.status_json(), stored));

  // 2 and 2.0 are equal: no write, but the decision writes its own form.
  w.agent["status"]["spend"]["cents"] = 0;
  d = w.step(at("2024-05-01T12:02:00Z"));
  EXPECT_FALSE(d.status_changed);
  EXPECT_TRUE(d.status_json()["spend"]["cents"].is_number_float());

  // Conditions out of order are rebuilt; their transition times are kept.
  Json reordered = stored;
  std::swap(reordered["conditions"][0], reordered["conditions"][1]);
  w.agent["status"] = reordered;
  d = w.step(at("2024-05-01T12:03:00Z"));
  EXPECT_TRUE(d.status_changed);
  EXPECT_EQ(d.status_json()["conditions"], stored["conditions"]);

  // Fields the status does not have (the CRD's schema prunes them anyway)
  // and extra keys in a condition are dropped by one write.
  w.agent["status"] = stored;
  w.agent["status"]["note"] = "dropped";
  w.agent["status"]["conditions"][2]["extra"] = 1;
  d = w.step(at("2024-05-01T12:03:00Z"));
  EXPECT_TRUE(d.status_changed);
  EXPECT_FALSE(d.status_json().contains("note"));
  EXPECT_EQ(d.status_json()["conditions"], stored["conditions"]);
  d = w.step(at("2024-05-01T12:03:00Z"));
  EXPECT_FALSE(d.status_changed);  // written once, then steady

  // A field of the wrong type is rewritten in the decision's own form.
  w.agent["status"]["lastScheduleTime"] = 17;
  d = w.step(at("2024-05-01T12:03:00Z"));
  EXPECT_TRUE(d.status_changed);
  EXPECT_FALSE(d.status_json().contains("lastScheduleTime"));
}

TEST(AgentDecision, CapabilitiesOfTheTypeInStatus) {
  Json a = agent();
  a["spec"]["type"] = "react_agent";
  AgentDecision d = decide(a, {}, kCreated);
  EXPECT_EQ(d.status_json()["capabilities"], capabilities_json(api::AgentType::kReact));
  EXPECT_TRUE(d.status_json()["capabilities"].contains("maxIterations"));
  EXPECT_TRUE(d.status_json()["capabilities"].contains("tools"));
}

TEST(AgentDecision, HistoryLimitsDeleteOldestFinishedRunsWithRecordedCost) {
  Json a = agent();
  a["spec"]["heartbeat"]["historyLimits"] = {{"succeeded", 2}, {"failed", 1}};
  std::vector<Json> runs;
  for (int i = 0; i < 4; ++i) {
    const std::string t = "2024-05-01T12:0" + std::to_string(i) + ":00Z";
    runs.push_back(
        with_status(run("ok-" + std::to_string(i)),
                    {{"phase", "Succeeded"}, {"finishedAt", t}, {"costRecorded", true}}));
    runs.push_back(with_status(
        run("bad-" + std::to_string(i)),
        {{"phase", i % 2 ? "Failed" : "TimedOut"}, {"finishedAt", t}, {"costRecorded", true}}));
  }
  runs.push_back(
      with_status(run("unmarked"), {{"phase", "Failed"}, {"finishedAt", "2024-05-01T11:00:00Z"}}));
  AgentDecision d = decide(a, runs, at("2024-05-01T12:09:00Z"));
  std::sort(d.delete_runs.begin(), d.delete_runs.end());
  EXPECT_EQ(d.delete_runs, (std::vector<std::string>{"bad-0", "bad-1", "bad-2", "ok-0", "ok-1"}));
}

TEST(AgentDecision, InvokeAnnotationAsksForAManualRunWithAStableName) {
  Json a = agent();
  a["metadata"]["annotations"] = {{"heartbeat.dev/invoke", "check the queue"}};
  AgentDecision d1 = decide(a, {}, kCreated);
  AgentDecision d2 = decide(a, {}, kCreated + 5s);
  ASSERT_TRUE(d1.invoke_run);
  const Json run = make_run_object(view_agent(a).spec.spec, *d1.invoke_run);
  EXPECT_EQ(run["spec"]["invocationSource"], "manual");
  EXPECT_EQ(run["spec"]["triggerDetail"], "check the queue");
  EXPECT_FALSE(run["spec"].contains("scheduledTime"));
  EXPECT_EQ(run["metadata"]["name"], d1.invoke_run->name);
  EXPECT_EQ(run["metadata"]["annotations"]["heartbeat.dev/agent-uid"], "uid-bot");
  // The status written after the run was lost (a 409, a crash): the next
  // pass re-derives the same run, never a second.
  EXPECT_EQ(d1.invoke_run->name, d2.invoke_run->name);
  a["metadata"]["resourceVersion"] = "101";
  EXPECT_EQ(decide(a, {}, kCreated).invoke_run->name, d1.invoke_run->name);
}

// GitOps: the annotation stays in Git and on the Agent. The value the
// operator acted on is in status.lastInvoke, so the same value makes no
// second run and each new value (even one seen before: A, B, A) makes one.
TEST(AgentDecision, InvokeValueKeptInGitMakesExactlyOneRunPerChange) {
  Json a = agent();
  a["metadata"]["annotations"] = {{"heartbeat.dev/invoke", "A"}};
  AgentDecision d = decide(a, {}, kCreated);
  ASSERT_TRUE(d.invoke_run);
  ASSERT_TRUE(d.status_changed);
  const std::string first = d.invoke_run->name;
  EXPECT_EQ(d.status_json()["lastInvoke"]["value"], "A");
  EXPECT_EQ(d.status_json()["lastInvoke"]["run"], first);
  a["status"] = d.status_json();
  for (int pass = 0; pass < 3; ++pass) {
    EXPECT_FALSE(decide(a, {}, kCreated + std::chrono::seconds(pass)).invoke_run);
  }
  a["metadata"]["annotations"]["heartbeat.dev/invoke"] = "B";
  d = decide(a, {}, kCreated + 10s);
  ASSERT_TRUE(d.invoke_run);
  EXPECT_NE(d.invoke_run->name, first);
  a["status"] = d.status_json();
  EXPECT_FALSE(decide(a, {}, kCreated + 11s).invoke_run);
  a["metadata"]["annotations"]["heartbeat.dev/invoke"] = "A";
  d = decide(a, {}, kCreated + 12s);
  ASSERT_TRUE(d.invoke_run);
  EXPECT_NE(d.invoke_run->name, first);  // not the old run's name: a new request
  // The annotation removed: nothing to do, the record stays.
  a["status"] = d.status_json();
  a["metadata"].erase("annotations");
  d = decide(a, {}, kCreated + 13s);
  EXPECT_FALSE(d.invoke_run);
  EXPECT_EQ(d.status_json()["lastInvoke"]["value"], "A");
}

// A long value is shown cut but compared whole.
TEST(AgentDecision, InvokeValuesAreComparedWhole) {
  Json a = agent();
  const std::string long_value(300, 'x');
  a["metadata"]["annotations"] = {{"heartbeat.dev/invoke", long_value + "1"}};
  AgentDecision d = decide(a, {}, kCreated);
  ASSERT_TRUE(d.invoke_run);
  EXPECT_EQ(d.status_json()["lastInvoke"]["value"].get<std::string>().size(),
            kLastInvokeValueBytesMax);
  a["status"] = d.status_json();
  a["metadata"]["annotations"]["heartbeat.dev/invoke"] = long_value + "2";
  EXPECT_TRUE(decide(a, {}, kCreated + 1s).invoke_run);
}

TEST(AgentDecision, ManualOnlyAgentWithoutScheduleIsValidAndNeverSchedules) {
  Json a = agent();
  a["spec"]["heartbeat"].erase("interval");
  AgentDecision d = decide(a, {}, at("2024-06-01T00:00:00Z"));
  EXPECT_TRUE(d.spec_errors.empty());
  EXPECT_FALSE(d.create_run);
  EXPECT_FALSE(d.status_json().contains("nextHeartbeatTime"));
}

TEST(AgentDecision, LongAgentNamesGiveValidRunNames) {
  const std::string long_name(80, 'a');
  World w{agent(long_name)};
  AgentDecision d = w.step(at("2024-05-01T12:05:00Z"));
  ASSERT_TRUE(d.create_run);
  EXPECT_TRUE(
      schedule::is_dns1123_label(created_run(w.agent, d)["metadata"]["name"].get<std::string>()));
}

TEST(AgentDecision, ClockStepsBackBehindLastScheduleTimeSchedulesNothing) {
  World w{agent()};
  w.step(at("2024-05-01T12:05:00Z"));
  w.finish("bot-1714565100", at("2024-05-01T12:06:00Z"), 0);
  w.step(at("2024-05-01T12:06:00Z"));
  AgentDecision d = w.step(at("2024-05-01T12:03:00Z"));
  EXPECT_FALSE(d.create_run);
  EXPECT_EQ(d.status_json()["nextHeartbeatTime"], "2024-05-01T12:10:00Z");
}

TEST(AgentDecision, ShortRunWritesItsStartAndEndInOneStatusUpdate) {
  World w{agent()};
  w.coalesce = std::chrono::seconds(10);
  w.step(kCreated);  // the initial status (nothing active: written at once)
  const Json before = w.agent["status"];
  AgentDecision d = w.step(at("2024-05-01T12:05:00Z"));
  ASSERT_TRUE(d.start_run);
  EXPECT_TRUE(d.status_deferred);
  EXPECT_FALSE(d.status_changed);                             // only the start changed: it waits
  EXPECT_EQ(d.status_json()["activeRun"], "bot-1714565100");  // the desired status still says it
  EXPECT_EQ(*d.requeue_at, at("2024-05-01T12:05:10Z"));       // the window's end, not a poll
  EXPECT_EQ(w.agent["status"], before);
  w.finish("bot-1714565100", at("2024-05-01T12:05:04Z"), 1.5);
  d = w.step(at("2024-05-01T12:05:05Z"));
  EXPECT_TRUE(d.status_changed);
  EXPECT_FALSE(d.status_deferred);
  EXPECT_EQ(d.status_json()["spend"]["cents"], 1.5);
  EXPECT_FALSE(d.status_json().contains("activeRun"));
  EXPECT_EQ(d.status_json()["phase"], "Idle");
  EXPECT_EQ(d.status_json()["lastScheduleTime"], "2024-05-01T12:05:00Z");
  EXPECT_EQ(d.status_json()["nextHeartbeatTime"], "2024-05-01T12:10:00Z");
}

TEST(AgentDecision, RunOutlastingTheCoalescingWindowIsShownRunning) {
  World w{agent()};
  w.coalesce = std::chrono::seconds(10);
  w.step(kCreated);
  w.step(at("2024-05-01T12:05:00Z"));
  AgentDecision d = w.step(at("2024-05-01T12:05:09Z"));
  EXPECT_TRUE(d.status_deferred);
  EXPECT_EQ(*d.requeue_at, at("2024-05-01T12:05:10Z"));
  d = w.step(at("2024-05-01T12:05:10Z"));
  EXPECT_TRUE(d.status_changed);
  EXPECT_FALSE(d.status_deferred);
  EXPECT_EQ(w.agent["status"]["activeRun"], "bot-1714565100");
  EXPECT_EQ(w.agent["status"]["phase"], "Running");
  EXPECT_EQ(w.agent["status"]["nextHeartbeatTime"], "2024-05-01T12:10:00Z");
}

TEST(AgentDecision, CoalescingNeverHoldsBackSpendOrConditions) {
  World w{agent()};
  w.coalesce = std::chrono::seconds(10);
  w.step(kCreated);
  // A new generation arrives as a run starts: observedGeneration must be written now.
  w.agent["metadata"]["generation"] = 2;
  AgentDecision d = w.step(at("2024-05-01T12:05:00Z"));
  ASSERT_TRUE(d.start_run);
  EXPECT_TRUE(d.status_changed);
  EXPECT_FALSE(d.status_deferred);
  EXPECT_EQ(w.agent["status"]["activeRun"], "bot-1714565100");
  // The next run starts as soon as the first one's cost is counted: the
  // counted spend goes out in the same pass, not after the window.
  w.step(at("2024-05-01T12:10:00Z"));  // queued behind the active run
  w.finish("bot-1714565100", at("2024-05-01T12:10:01Z"), 2.0);
  d = w.step(at("2024-05-01T12:10:02Z"));
  ASSERT_TRUE(d.start_run);
  EXPECT_TRUE(d.ledger_changed);
  EXPECT_TRUE(d.status_changed);
  EXPECT_EQ(w.agent["status"]["spend"]["cents"], 2.0);
  EXPECT_EQ(w.agent["status"]["activeRun"], *d.start_run);
}

// The decision reads another Agent's answer from the map the shell filled
// for the targets reads_needed named: an Agent not in it wakes nobody.
TEST(AgentDecision, MentionsWakeTheAgentsTheMapSaysAccept) {
  World w{agent()};
  w.step(at("2024-05-01T12:05:00Z"));
  const std::string ran = schedule::scheduled_run_name("bot", at("2024-05-01T12:05:00Z"));
  const TimePoint now = at("2024-05-01T12:06:00Z");
  w.finish(ran, now, 0.5);
  (*w.find(ran))["status"]["output"] = "@beta @mallory @gamma: done, cc @bot";
  const std::vector<RunObservation> runs = observe_all(w.runs, now);
  const ReadsNeeded reads = reads_needed(view_agent(w.agent), runs, nullptr, now);
  EXPECT_EQ(reads.mention_targets, (std::vector<std::string>{"beta", "mallory", "gamma"}));
  AgentDecisionInput in;
  in.agent = &w.agent;
  in.runs = runs;
  in.now = now;
  in.mention_accepted = {{"beta", true}, {"mallory", false}};
  const AgentDecision d = decide_agent(in);
  ASSERT_EQ(d.mention_runs.size(), 1u);
  EXPECT_EQ(d.mention_runs[0].target, "beta");
  // Positive control: the same runs wake gamma once the map says it accepts.
  in.mention_accepted["gamma"] = true;
  EXPECT_EQ(decide_agent(in).mention_runs.size(), 2u);
}

TEST(AgentDecision, ReadsNeededBoundsTheMentionTargets) {
  World w{agent()};
  w.step(at("2024-05-01T12:05:00Z"));
  const std::string ran = schedule::scheduled_run_name("bot", at("2024-05-01T12:05:00Z"));
  const TimePoint now = at("2024-05-01T12:06:00Z");
  w.finish(ran, now, 0.5);
  (*w.find(ran))["status"]["output"] = "@a1 @a2 @a3";
  const Json one = *w.find(ran);
  for (std::size_t i = 0; i < kMentionTargetsPerPassMax; ++i) {
    Json more = one;
    more["metadata"]["name"] = "bot-done-" + std::to_string(i);
    more["metadata"]["uid"] = "uid-done-" + std::to_string(i);
    more["status"]["output"] = "@t" + std::to_string(i) + "-x @t" + std::to_string(i) + "-y";
    w.runs.push_back(more);
  }
  const ReadsNeeded reads =
      reads_needed(view_agent(w.agent), observe_all(w.runs, now), nullptr, now);
  EXPECT_EQ(reads.mention_targets.size(), kMentionTargetsPerPassMax);
  EXPECT_EQ(reads.mention_targets.front(), "a1");
}

// promptFrom is read before the one decision, only when a slot is due whose
// run may be made, or a skip stands.
TEST(AgentDecision, ThePromptIsReadWhenASlotIsDueOrASkipStands) {
  Json a = agent();
  a["spec"]["heartbeat"].erase("prompt");
  a["spec"]["heartbeat"]["promptFrom"] = {
      {"configMapKeyRef", {{"name", "prompts"}, {"key", "heartbeat.md"}}}};
  World w{a};
  w.step(at("2024-05-01T12:04:00Z"));
  EXPECT_FALSE(w.last_reads.prompt) << "no slot due";
  AgentDecision d = w.step(at("2024-05-01T12:05:00Z"));
  EXPECT_TRUE(w.last_reads.prompt);
  EXPECT_TRUE(d.create_run);
  d = w.step(at("2024-05-01T12:06:00Z"));
  EXPECT_FALSE(w.last_reads.prompt) << "the slot's run exists";
  // A skip standing is read again until it is fixed.
  World skipping{a};
  skipping.prompt_from_gap = PromptGap{kReasonPromptEmpty, "empty"};
  skipping.step(at("2024-05-01T12:05:00Z"));
  EXPECT_TRUE(skipping.last_reads.prompt);
  skipping.step(at("2024-05-01T12:06:00Z"));
  EXPECT_TRUE(skipping.last_reads.prompt);
  // An inline prompt is never read; a paused agent makes no slot's run.
  World inline_prompt{agent()};
  inline_prompt.step(at("2024-05-01T12:05:00Z"));
  EXPECT_FALSE(inline_prompt.last_reads.prompt);
  Json paused = a;
  paused["spec"]["paused"] = true;
  World held{paused};
  held.step(at("2024-05-01T12:05:00Z"));
  EXPECT_FALSE(held.last_reads.prompt);
}

// A queued run takes the due slot (no run is made, no prompt read), and
// the gate is asked for it.
TEST(AgentDecision, AQueuedRunTakesTheSlotWithoutAPromptRead) {
  Json a = agent();
  a["spec"]["heartbeat"].erase("prompt");
  a["spec"]["heartbeat"]["promptFrom"] = {
      {"configMapKeyRef", {{"name", "prompts"}, {"key", "heartbeat.md"}}}};
  const TimePoint now = at("2024-05-01T12:05:00Z");
  const std::vector<Json> runs = {run("bot-manual-1", "manual")};
  const ReadsNeeded reads = reads_needed(view_agent(a), observe_all(runs, now), nullptr, now);
  EXPECT_FALSE(reads.prompt);
  EXPECT_TRUE(reads.gate);
}

// The prompt read is decided before the decision: it must happen on every
// pass whose decision (without the prompt) would make a slot's run, and on
// as few others as can be known cheaply. Three hours, a pass a minute.
std::pair<int, int> slot_runs_and_prompt_reads(const Json& a) {
  World w{a};
  int slot_runs = 0;
  int reads = 0;
  for (int minute = 1; minute <= 180; ++minute) {
    const TimePoint now = kCreated + std::chrono::minutes(minute);
    AgentDecisionInput in;
    in.agent = &w.agent;
    in.runs = observe_all(w.runs, now);
    in.now = now;
    const AgentDecision unread = decide_agent(in);
    const bool read = reads_needed(view_agent(w.agent), in.runs, nullptr, now).prompt;
    const bool makes_slot_run = unread.create_run && unread.create_run->slot;
    EXPECT_TRUE(read || !makes_slot_run) << "no read before a slot's run at minute " << minute;
    slot_runs += makes_slot_run ? 1 : 0;
    reads += read ? 1 : 0;
    const AgentDecision d = w.step(now);
    if (d.start_run) w.finish(*d.start_run, now, 6.0);
  }
  return {slot_runs, reads};
}

TEST(AgentDecision, ThePromptIsReadExactlyForTheSlotsRunsWhenNothingElseBlocks) {
  Json a = agent();
  a["spec"]["heartbeat"].erase("prompt");
  a["spec"]["heartbeat"]["promptFrom"] = {
      {"configMapKeyRef", {{"name", "prompts"}, {"key", "heartbeat.md"}}}};
  EXPECT_EQ(slot_runs_and_prompt_reads(a), std::make_pair(36, 36));
  // A spent budget stops the slots and the reads with them.
  a["spec"]["budget"] = {{"monthlyCents", 10}};
  EXPECT_EQ(slot_runs_and_prompt_reads(a), std::make_pair(2, 2));
}

}  // namespace
}  // namespace hb::controllers
