#include "controllers/schedule/blocks.h"

#include <gtest/gtest.h>

#include "tests/unit/schedule/test_time.h"

namespace hb::schedule {
namespace {

using testing::utc;

TEST(Blocks, NothingBlocksByDefault) {
  const BlockResult r = evaluate_blocks(BlockInput{}, utc("2024-03-01T10:00:00Z"));
  EXPECT_FALSE(r.blocked());
  EXPECT_FALSE(r.paused_until_lifts_at);
  EXPECT_FALSE(r.budget_resets_at);
}

TEST(Blocks, BoardPause) {
  BlockInput in;
  in.paused = true;
  const BlockResult r = evaluate_blocks(in, utc("2024-03-01T10:00:00Z"));
  ASSERT_EQ(r.blocks.size(), 1u);
  EXPECT_EQ(r.blocks[0].reason, "Paused");
  EXPECT_NE(r.blocks[0].message.find("spec.paused"), std::string::npos);
  EXPECT_FALSE(r.paused_until_lifts_at);
}

TEST(Blocks, PausedUntilInTheFutureBlocksAndSaysWhenItLifts) {
  BlockInput in;
  in.paused_until = utc("2024-03-01T10:30:00Z");
  const BlockResult r = evaluate_blocks(in, utc("2024-03-01T10:00:00Z"));
  ASSERT_TRUE(r.has(kReasonPausedByAgent));
  EXPECT_EQ(r.paused_until_lifts_at, in.paused_until);
  EXPECT_NE(r.blocks[0].message.find("2024-03-01T10:30:00Z"), std::string::npos);
}

TEST(Blocks, PausedUntilInThePastOrNowDoesNotBlock) {
  BlockInput in;
  in.paused_until = utc("2024-03-01T10:30:00Z");
  EXPECT_FALSE(evaluate_blocks(in, utc("2024-03-01T10:30:00Z")).blocked());
  EXPECT_FALSE(evaluate_blocks(in, utc("2024-03-01T11:00:00Z")).blocked());
}

TEST(Blocks, PausedUntilFollowsClockJumpsBothWays) {
  BlockInput in;
  in.paused_until = utc("2024-03-01T10:30:00Z");
  EXPECT_TRUE(evaluate_blocks(in, utc("2024-03-01T10:29:59Z")).blocked());
  // Clock jumps forward past pausedUntil: lifted.
  EXPECT_FALSE(evaluate_blocks(in, utc("2024-03-02T09:00:00Z")).blocked());
  // And back behind it again: blocked again, with the same lift time.
  const BlockResult back = evaluate_blocks(in, utc("2024-03-01T09:00:00Z"));
  EXPECT_TRUE(back.has(kReasonPausedByAgent));
  EXPECT_EQ(back.paused_until_lifts_at, in.paused_until);
}

TEST(Blocks, BudgetReached) {
  BlockInput in;
  in.monthly_budget_cents = 1000;
  in.spend_period = "2024-03";
  in.spent_cents_this_period = 999;
  EXPECT_FALSE(evaluate_blocks(in, utc("2024-03-15T00:00:00Z")).blocked());
  in.spent_cents_this_period = 1000;
  const BlockResult r = evaluate_blocks(in, utc("2024-03-15T00:00:00Z"));
  ASSERT_TRUE(r.has(kReasonBudgetExceeded));
  EXPECT_EQ(format_rfc3339(*r.budget_resets_at), "2024-04-01T00:00:00Z");
  EXPECT_NE(r.blocks[0].message.find("1000 of the 1000 cents"), std::string::npos);
  EXPECT_NE(r.blocks[0].message.find("2024-03"), std::string::npos);
}

// spec.budget.dailyCents: its own condition reason, lifted when the day
// ends; a day that has ended counts as nothing; the month's block wins.
TEST(Blocks, DailyBudgetReachedLiftsWhenTheDayEnds) {
  BlockInput in;
  in.spend_period = "2024-03";
  in.daily_budget_cents = 50;
  in.spent_cents_today = 49;
  in.day_ends = utc("2024-03-16T00:00:00Z");
  const TimePoint now = utc("2024-03-15T18:00:00Z");
  EXPECT_FALSE(evaluate_blocks(in, now).blocked());
  in.spent_cents_today = 50;
  const BlockResult r = evaluate_blocks(in, now);
  ASSERT_TRUE(r.has(kReasonBudgetExceeded));
  EXPECT_EQ(r.blocks[0].condition_reason, kReasonDailyBudgetExceeded);
  EXPECT_EQ(format_rfc3339(*r.budget_resets_at), "2024-03-16T00:00:00Z");
  EXPECT_NE(r.blocks[0].message.find("spec.budget.dailyCents"), std::string::npos);
  EXPECT_FALSE(evaluate_blocks(in, utc("2024-03-16T00:00:00Z")).blocked()) << "the next day";
  in.monthly_budget_cents = 100;
  in.spent_cents_this_period = 100;
  EXPECT_TRUE(evaluate_blocks(in, now).blocks[0].condition_reason.empty()) << "the month's";
}

TEST(Blocks, ATeamsDailyBudgetBlocksAndStopsRunsInFlightUnlessFinish) {
  PolicyBudget team{"team", 0, 0, "2024-03", "ns"};
  team.daily_budget_cents = 20;
  team.spent_today_cents = 20;
  team.day_ends = utc("2024-03-15T23:00:00Z");
  BlockInput in;
  in.policy_budgets = {team};
  const TimePoint now = utc("2024-03-15T12:00:00Z");
  const BlockResult r = evaluate_blocks(in, now);
  ASSERT_TRUE(r.has(kReasonBudgetExceeded));
  EXPECT_EQ(r.blocks[0].condition_reason, kReasonPolicyDailyBudgetExceeded);
  EXPECT_EQ(format_rfc3339(*r.budget_resets_at), "2024-03-15T23:00:00Z");
  EXPECT_EQ(budget_stopping_policy(in.policy_budgets, now), &in.policy_budgets[0]);
  EXPECT_FALSE(evaluate_blocks(in, utc("2024-03-15T23:00:00Z")).blocked()) << "its next day";
  in.policy_budgets[0].finish_on_exceeded = true;
  EXPECT_EQ(budget_stopping_policy(in.policy_budgets, now), nullptr);
  in.policy_budgets[0].spent_today_cents = 19;  // control
  in.policy_budgets[0].finish_on_exceeded = false;
  EXPECT_FALSE(evaluate_blocks(in, now).blocked());
  EXPECT_EQ(budget_stopping_policy(in.policy_budgets, now), nullptr);
}

TEST(Blocks, ZeroOrNegativeBudgetIsUnlimited) {
  BlockInput in;
  in.spend_period = "2024-03";
  in.spent_cents_this_period = 1'000'000;
  EXPECT_FALSE(evaluate_blocks(in, utc("2024-03-15T00:00:00Z")).blocked());
  in.monthly_budget_cents = -5;
  EXPECT_FALSE(evaluate_blocks(in, utc("2024-03-15T00:00:00Z")).blocked());
}

TEST(Blocks, MonthRolloverResetsSpend) {
  BlockInput in;
  in.monthly_budget_cents = 500;
  in.spent_cents_this_period = 800;
  in.spend_period = "2024-01";
  EXPECT_TRUE(evaluate_blocks(in, utc("2024-01-31T23:59:00Z")).has(kReasonBudgetExceeded));
  EXPECT_FALSE(evaluate_blocks(in, utc("2024-02-01T00:00:00Z")).blocked());
}

TEST(Blocks, YearRolloverResetsSpend) {
  BlockInput in;
  in.monthly_budget_cents = 500;
  in.spent_cents_this_period = 800;
  in.spend_period = "2024-12";
  const BlockResult dec = evaluate_blocks(in, utc("2024-12-31T23:59:59Z"));
  ASSERT_TRUE(dec.has(kReasonBudgetExceeded));
  EXPECT_EQ(format_rfc3339(*dec.budget_resets_at), "2025-01-01T00:00:00Z");
  EXPECT_FALSE(evaluate_blocks(in, utc("2025-01-01T00:00:00Z")).blocked());
  // Spend from December 2023 is not December 2024's.
  in.spend_period = "2023-12";
  EXPECT_FALSE(evaluate_blocks(in, utc("2024-12-15T00:00:00Z")).blocked());
}

TEST(Blocks, AllBlocksReportedInOrder) {
  BlockInput in;
  in.paused = true;
  in.paused_until = utc("2024-03-01T11:00:00Z");
  in.monthly_budget_cents = 1;
  in.spent_cents_this_period = 1;
  in.spend_period = "2024-03";
  const BlockResult r = evaluate_blocks(in, utc("2024-03-01T10:00:00Z"));
  ASSERT_EQ(r.blocks.size(), 3u);
  EXPECT_EQ(r.blocks[0].reason, kReasonPaused);
  EXPECT_EQ(r.blocks[1].reason, kReasonPausedByAgent);
  EXPECT_EQ(r.blocks[2].reason, kReasonBudgetExceeded);
}

// A team budget (HeartbeatPolicy) spent blocks with its own condition
// reason, names the policy and lifts when the month turns.
TEST(Blocks, PolicyBudgetSpentBlocksAndNamesThePolicy) {
  BlockInput in;
  in.policy_budgets = {{"team-a", 100, 40, "2024-03"}, {"team-b", 50, 50, "2024-03"}};
  const BlockResult r = evaluate_blocks(in, utc("2024-03-10T10:00:00Z"));
  ASSERT_EQ(r.blocks.size(), 1u);
  EXPECT_EQ(r.blocks[0].reason, kReasonBudgetExceeded);
  EXPECT_EQ(r.blocks[0].condition_reason, kReasonPolicyBudgetExceeded);
  EXPECT_NE(r.blocks[0].message.find("HeartbeatPolicy team-b spent 50 of the 50 cents"),
            std::string::npos);
  EXPECT_EQ(*r.budget_resets_at, utc("2024-04-01T00:00:00Z"));
  EXPECT_FALSE(r.until_a_person_acts);
}

TEST(Blocks, PolicyBudgetUnderOrOfAnEarlierMonthOrZeroDoesNotBlock) {
  BlockInput in;
  in.policy_budgets = {{"under", 100, 99, "2024-03"},
                       {"last-month", 10, 500, "2024-02"},
                       {"no-budget", 0, 500, "2024-03"}};
  EXPECT_FALSE(evaluate_blocks(in, utc("2024-03-10T10:00:00Z")).blocked());
}

TEST(Blocks, TheAgentsOwnBudgetWinsOverATeamBudget) {
  BlockInput in;
  in.monthly_budget_cents = 10;
  in.spent_cents_this_period = 10;
  in.spend_period = "2024-03";
  in.policy_budgets = {{"team", 5, 5, "2024-03"}};
  const BlockResult r = evaluate_blocks(in, utc("2024-03-10T10:00:00Z"));
  ASSERT_EQ(r.blocks.size(), 1u);
  EXPECT_TRUE(r.blocks[0].condition_reason.empty());
}

// A paused HeartbeatPolicy (the kill switch) blocks ahead of every other
// hold, names the first paused policy by namespace and name, and waits for
// a person: no time lifts it. The same policies unpaused block nothing.
TEST(Blocks, APausedPolicyBlocksFirstNamesItAndWaitsForAPerson) {
  BlockInput in;
  in.paused = true;
  in.policy_budgets = {{.policy = "no-pause", .period = "2024-03", .ns = "ns"},
                       {.policy = "team-a", .period = "2024-03", .ns = "ns", .paused = true},
                       {.policy = "team-b",
                        .period = "2024-03",
                        .ns = "ns",
                        .paused = true,
                        .cancel_running = true}};
  const BlockResult r = evaluate_blocks(in, utc("2024-03-10T10:00:00Z"));
  ASSERT_EQ(r.blocks.size(), 2u);
  EXPECT_EQ(r.blocks[0].reason, kReasonPolicyPaused);
  EXPECT_NE(r.blocks[0].message.find("HeartbeatPolicy ns/team-a is paused"), std::string::npos);
  EXPECT_EQ(r.blocks[1].reason, kReasonPaused);
  EXPECT_TRUE(r.until_a_person_acts);
  EXPECT_EQ(pausing_policy(in.policy_budgets)->policy, "team-a");
  EXPECT_EQ(policy_key(*cancelling_policy(in.policy_budgets)), "ns/team-b");
  // Positive control: the same policies, none paused, hold nothing.
  for (PolicyBudget& p : in.policy_budgets) p.paused = false;
  in.paused = false;
  EXPECT_FALSE(evaluate_blocks(in, utc("2024-03-10T10:00:00Z")).blocked());
  EXPECT_EQ(pausing_policy(in.policy_budgets), nullptr);
  // cancelRunning alone (without paused) cancels nothing.
  EXPECT_EQ(cancelling_policy(in.policy_budgets), nullptr);
}

// A spent team budget stops the team's runs in flight unless the policy
// says onExceeded: Finish; spend of an earlier month stops nothing.
TEST(Blocks, ASpentTeamBudgetStopsRunsInFlightUnlessThePolicyLetsThemFinish) {
  const TimePoint now = utc("2024-03-10T10:00:00Z");
  std::vector<PolicyBudget> policies = {{.policy = "loose",
                                         .budget_cents = 100,
                                         .spent_cents = 150,
                                         .period = "2024-03",
                                         .ns = "ns",
                                         .finish_on_exceeded = true},
                                        {.policy = "strict",
                                         .budget_cents = 100,
                                         .spent_cents = 100,
                                         .period = "2024-03",
                                         .ns = "ns"}};
  ASSERT_NE(budget_stopping_policy(policies, now), nullptr);
  EXPECT_EQ(policy_key(*budget_stopping_policy(policies, now)), "ns/strict");
  // The controls: under budget, last month's spend, or Finish: nothing stops.
  policies[1].spent_cents = 99;
  EXPECT_EQ(budget_stopping_policy(policies, now), nullptr);
  policies[1].spent_cents = 500;
  policies[1].period = "2024-02";
  EXPECT_EQ(budget_stopping_policy(policies, now), nullptr);
  policies[1].period = "2024-03";
  policies[1].finish_on_exceeded = true;
  EXPECT_EQ(budget_stopping_policy(policies, now), nullptr);
}

}  // namespace
}  // namespace hb::schedule
