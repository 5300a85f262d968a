// The plan for runs whose Agent is gone: which steps, carrying what, in
// which order. The order is what makes it crash-safe (charge before mark),
// so a helper checks it and a positive control shows the check can fail.
#include "controllers/plan/orphan_plan.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "tests/unit/controllers/fixtures.h"

namespace hb::controllers {
namespace {

using namespace testing;
using ::testing::ElementsAre;

const TimePoint kNow = at("2024-05-01T12:10:00Z");

// A run as stored, and how it was observed, built by hand: the plan reads
// only what observe_run returns.
struct Orphan {
  Json run;
  RunObservation observed;
  bool has_job = false;
  std::vector<std::string> policies;
};

Orphan in_flight(const std::string& name) {
  Orphan o{with_status(run(name), {{"phase", "Running"}, {"jobName", name}}), {}, true, {}};
  o.observed.status = o.run["status"];
  o.observed.phase = RunPhase::kRunning;
  o.observed.delete_job = true;
  return o;
}

Orphan finished(const std::string& name, double cost_cents,
                const char* finished_at = "2024-05-01T12:09:00Z") {
  Orphan o{with_status(run(name), {{"phase", "Running"}, {"jobName", name}}), {}, false, {"team"}};
  o.observed.status = {
      {"phase", "Cancelled"},
      {"reason", "AgentNotFound"},
      {"finishedAt", finished_at},
      {"usage", {{"costCents", cost_cents}, {"inputTokens", 10}, {"outputTokens", 4}}}};
  o.observed.phase = RunPhase::kCancelled;
  o.observed.became_final = true;
  return o;
}

Orphan settled(const std::string& name, const char* finished_at) {
  Orphan o{
      with_status(run(name),
                  {{"phase", "Succeeded"}, {"finishedAt", finished_at}, {"costRecorded", true}}),
      {},
      false,
      {}};
  o.observed.settled = true;
  o.observed.phase = RunPhase::kSucceeded;
  return o;
}

struct Planned {
  std::vector<OrphanRun> runs;
  OrphanPlan plan;
};

// Keeps the orphans alive: the plan's input points into them.
Planned plan_for(const std::vector<Orphan>& orphans, const LedgerRecord* ledger,
                 std::chrono::seconds retention = std::chrono::seconds(0)) {
  Planned p;
  for (const Orphan& o : orphans) {
    p.runs.push_back({&o.run, o.observed, o.has_job, o.policies});
  }
  OrphanPlanInput in;
  in.runs = &p.runs;
  in.ledger = ledger;
  in.retention = retention;
  in.now = kNow;
  p.plan = plan_orphans(in);
  return p;
}

// "kind:run" per step, the charge's runs joined by '+'.
std::vector<std::string> outline(const OrphanPlan& plan) {
  std::vector<std::string> out;
  for (const OrphanStep& s : plan.steps) {
    switch (s.kind) {
      case OrphanStepKind::kDeleteJob:
        out.push_back("delete-job:" + s.run);
        break;
      case OrphanStepKind::kChargeLedger: {
        std::string runs;
        for (const LedgerCharge& c : s.charges) runs += (runs.empty() ? "" : "+") + c.run;
        out.push_back("charge:" + runs);
        break;
      }
      case OrphanStepKind::kMarkFinal:
        out.push_back("mark:" + s.run);
        break;
      case OrphanStepKind::kDeleteRun:
        out.push_back("delete-run:" + s.run);
        break;
    }
  }
  return out;
}

// Every marked run is charged by an earlier step (when there is a ledger).
bool charged_before_marked(const std::vector<OrphanStep>& steps) {
  std::vector<std::string> charged;
  for (const OrphanStep& s : steps) {
    if (s.kind == OrphanStepKind::kChargeLedger) {
      for (const LedgerCharge& c : s.charges) charged.push_back(c.run);
    }
    if (s.kind == OrphanStepKind::kMarkFinal &&
        std::find(charged.begin(), charged.end(), s.run) == charged.end()) {
      return false;
    }
  }
  return true;
}

const OrphanStep& step_of(const OrphanPlan& plan, OrphanStepKind kind, const std::string& run) {
  auto it = std::find_if(plan.steps.begin(), plan.steps.end(), [&](const OrphanStep& s) {
    return s.kind == kind && (run.empty() || s.run == run);
  });
  EXPECT_NE(it, plan.steps.end());
  return *it;
}

const LedgerRecord kEmptyLedger{"ns", "bot", {}, {}, {}};

TEST(OrphanPlan, NoOrphansNothingToDo) {
  const Planned p = plan_for({}, &kEmptyLedger, std::chrono::hours(1));
  EXPECT_TRUE(p.plan.steps.empty());
  EXPECT_FALSE(p.plan.next_retention_at);
}

TEST(OrphanPlan, InFlightOrphanOnlyLosesItsJob) {
  const Planned p = plan_for({in_flight("r1")}, &kEmptyLedger, std::chrono::hours(1));
  EXPECT_THAT(outline(p.plan), ElementsAre("delete-job:r1"));
  EXPECT_FALSE(p.plan.next_retention_at);
  EXPECT_FALSE(orphans_need_ledger(p.runs));
}

TEST(OrphanPlan, JobNotInCacheIsNotDeleted) {
  Orphan o = in_flight("r1");
  o.has_job = false;
  EXPECT_TRUE(plan_for({o}, &kEmptyLedger).plan.steps.empty());
}

TEST(OrphanPlan, FinishedOrphanIsChargedThenMarkedWithTheLedgersFigure) {
  const Planned p = plan_for({finished("r1", 3.5)}, &kEmptyLedger);
  EXPECT_TRUE(orphans_need_ledger(p.runs));
  EXPECT_THAT(outline(p.plan), ElementsAre("charge:r1", "mark:r1"));
  EXPECT_TRUE(charged_before_marked(p.plan.steps));

  const OrphanStep& charge = step_of(p.plan, OrphanStepKind::kChargeLedger, "");
  EXPECT_EQ(charge.record, kEmptyLedger);
  EXPECT_EQ(charge.agent_zone, nullptr);  // no day recorded: UTC
  ASSERT_EQ(charge.charges.size(), 1u);
  const LedgerCharge& c = charge.charges[0];
  EXPECT_EQ(c.run, "r1");
  EXPECT_DOUBLE_EQ(c.cost_cents, 3.5);
  EXPECT_EQ(c.input_tokens, 10);
  EXPECT_EQ(c.output_tokens, 4);
  EXPECT_EQ(c.finished_at, at("2024-05-01T12:09:00Z"));
  EXPECT_THAT(c.policies, ElementsAre("team"));

  const OrphanStep& mark = step_of(p.plan, OrphanStepKind::kMarkFinal, "r1");
  EXPECT_EQ(mark.status["phase"], "Cancelled");
  EXPECT_EQ(mark.status["costRecorded"], true);
  EXPECT_DOUBLE_EQ(mark.status["usage"]["costCents"].get<double>(), 3.5);
}

TEST(OrphanPlan, FinishWithoutFinishedAtIsChargedNow) {
  Orphan o = finished("r1", 1);
  o.observed.status.erase("finishedAt");
  const Planned p = plan_for({o}, &kEmptyLedger);
  EXPECT_EQ(step_of(p.plan, OrphanStepKind::kChargeLedger, "").charges.at(0).finished_at, kNow);
}

TEST(OrphanPlan, EarlierHigherChargeIsKept) {
  LedgerRecord ledger = kEmptyLedger;
  ledger.counted = {{"r1", to_micro_cents(9), "2024-05"}};
  const Planned p = plan_for({finished("r1", 4)}, &ledger);
  EXPECT_THAT(outline(p.plan), ElementsAre("charge:r1", "mark:r1"));
  // The charge carries the run's own figure; the ledger keeps the higher one.
  EXPECT_DOUBLE_EQ(step_of(p.plan, OrphanStepKind::kChargeLedger, "").charges.at(0).cost_cents, 4);
  const OrphanStep& mark = step_of(p.plan, OrphanStepKind::kMarkFinal, "r1");
  EXPECT_DOUBLE_EQ(mark.status["usage"]["costCents"].get<double>(), 9);
}

TEST(OrphanPlan, EarlierLowerChargeGivesWayToTheRunsFigure) {
  LedgerRecord ledger = kEmptyLedger;
  ledger.counted = {{"r1", to_micro_cents(2), "2024-05"}};
  const Planned p = plan_for({finished("r1", 4)}, &ledger);
  const OrphanStep& mark = step_of(p.plan, OrphanStepKind::kMarkFinal, "r1");
  EXPECT_DOUBLE_EQ(mark.status["usage"]["costCents"].get<double>(), 4);
}

TEST(OrphanPlan, WithoutLedgerOnlyTheMark) {
  const Planned p = plan_for({finished("r1", 4)}, nullptr);
  EXPECT_THAT(outline(p.plan), ElementsAre("mark:r1"));
  const OrphanStep& mark = step_of(p.plan, OrphanStepKind::kMarkFinal, "r1");
  EXPECT_EQ(mark.status["costRecorded"], true);
  EXPECT_DOUBLE_EQ(mark.status["usage"]["costCents"].get<double>(), 4);
}

TEST(OrphanPlan, JobsFirstThenOneChargeThenMarksThenRetention) {
  const Planned p = plan_for({finished("r1", 1), in_flight("r2"), finished("r3", 2),
                              settled("r-old", "2024-05-01T09:00:00Z")},
                             &kEmptyLedger, std::chrono::hours(1));
  EXPECT_THAT(outline(p.plan), ElementsAre("delete-job:r2", "charge:r1+r3", "mark:r1", "mark:r3",
                                           "delete-run:r-old"));
  EXPECT_TRUE(charged_before_marked(p.plan.steps));
  // r1 and r3 are settled once marked: due an hour after they finished.
  EXPECT_EQ(p.plan.next_retention_at, at("2024-05-01T13:09:00Z"));
}

// Positive control: the order check catches a mark written before its charge.
TEST(OrphanPlan, OrderCheckCatchesMarkBeforeCharge) {
  Planned p = plan_for({finished("r1", 1)}, &kEmptyLedger);
  ASSERT_TRUE(charged_before_marked(p.plan.steps));
  std::reverse(p.plan.steps.begin(), p.plan.steps.end());
  EXPECT_THAT(outline(p.plan), ElementsAre("mark:r1", "charge:r1"));
  EXPECT_FALSE(charged_before_marked(p.plan.steps));
}

TEST(OrphanPlan, RetentionDeletesOnlyRunsPastIt) {
  Orphan going = settled("r-going", "2024-05-01T08:00:00Z");
  going.run["metadata"]["deletionTimestamp"] = "2024-05-01T12:00:00Z";
  Orphan unmarked = settled("r-unmarked", "2024-05-01T08:00:00Z");
  unmarked.run["status"].erase("costRecorded");
  const Planned p = plan_for(
      {settled("r-old", "2024-05-01T10:00:00Z"), settled("r-young", "2024-05-01T11:40:00Z"),
       settled("r-edge", "2024-05-01T11:10:00Z"), going, unmarked},
      &kEmptyLedger, std::chrono::hours(1));
  EXPECT_THAT(outline(p.plan), ElementsAre("delete-run:r-old", "delete-run:r-edge"));
  EXPECT_EQ(p.plan.next_retention_at, at("2024-05-01T12:40:00Z"));
  EXPECT_FALSE(orphans_need_ledger(p.runs));
}

TEST(OrphanPlan, ZeroRetentionKeepsEveryRun) {
  const Planned p = plan_for({settled("r-old", "2024-01-01T00:00:00Z")}, &kEmptyLedger);
  EXPECT_TRUE(p.plan.steps.empty());
  EXPECT_FALSE(p.plan.next_retention_at);
}

TEST(OrphanPlan, RunMarkedPastRetentionIsDeletedAfterItsMark) {
  const Planned p =
      plan_for({finished("r1", 1, "2024-05-01T09:00:00Z")}, &kEmptyLedger, std::chrono::hours(1));
  EXPECT_THAT(outline(p.plan), ElementsAre("charge:r1", "mark:r1", "delete-run:r1"));
}

// A crash after the charge and before the mark: the next pass plans the same
// charge against the record as charged, which counts it once, and marks
// the run with the figure charged.
TEST(OrphanPlan, ChargeRepeatedAfterACrashCountsOnce) {
  const Planned first = plan_for({finished("r1", 3)}, &kEmptyLedger);
  const OrphanStep& charge = step_of(first.plan, OrphanStepKind::kChargeLedger, "");
  const LedgerRecord charged = charge_runs(charge.record, charge.charges, kNow);

  const Planned again = plan_for({finished("r1", 3)}, &charged);
  EXPECT_THAT(outline(again.plan), ElementsAre("charge:r1", "mark:r1"));
  const OrphanStep& recharge = step_of(again.plan, OrphanStepKind::kChargeLedger, "");
  const LedgerRecord twice = charge_runs(recharge.record, recharge.charges, kNow);
  EXPECT_EQ(spend_in(twice, "2024-05").cents, spend_in(charged, "2024-05").cents);
  EXPECT_DOUBLE_EQ(spend_in(twice, "2024-05").cents, 3);
  const OrphanStep& mark = step_of(again.plan, OrphanStepKind::kMarkFinal, "r1");
  EXPECT_DOUBLE_EQ(mark.status["usage"]["costCents"].get<double>(), 3);
}

}  // namespace
}  // namespace hb::controllers
