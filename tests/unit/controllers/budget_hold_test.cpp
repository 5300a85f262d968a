// Money held ahead for runs in flight: what a run is given, when it waits,
// and that runs started together never hold more than a budget has left
// (budget_hold_ahead.h, shell/budget_holds.h).
#include <gtest/gtest.h>

#include <random>

#include "controllers/shell/budget_holds.h"
#include "controllers/spend/budget_hold_ahead.h"

namespace hb::controllers {
namespace {

const std::string kTeam = budget_pool_of_policy("ns", "team");
const std::string kAgent = budget_pool_of_agent("ns/bot");

double none(const std::string&) {
  return 0;
}

TEST(DecideHold, NoBudgetHoldsNothing) {
  const HoldDecision d = decide_hold({}, 50, none);
  EXPECT_TRUE(d.start);
  EXPECT_FALSE(d.cents.has_value());
}

TEST(DecideHold, ARunIsGivenItsWorstCaseOrTheRoomLeft) {
  EXPECT_EQ(decide_hold({{kTeam, 100}}, 30, none).cents, 30.0);
  // Alone, a run is given what is left (its runner stops before a call that could pass it).
  EXPECT_EQ(decide_hold({{kTeam, 10}}, 30, none).cents, 10.0);
  EXPECT_EQ(decide_hold({{kTeam, 0}}, 30, none).cents, 0.0);
  // The tightest budget decides.
  EXPECT_EQ(decide_hold({{kAgent, 12}, {kTeam, 100}}, 30, none).cents, 12.0);
}

TEST(DecideHold, ARunWaitsWhileRunsInFlightHoldRoomItWouldBeGiven) {
  const auto team_holds = [](double cents) {
    return [cents](const std::string& pool) { return pool == kTeam ? cents : 0.0; };
  };
  // 100 left, 60 held: 40 free covers a worst case of 30.
  EXPECT_EQ(decide_hold({{kTeam, 100}}, 30, team_holds(60)).cents, 30.0);
  // 80 held: 20 free, less than the 30 it would be given alone: it waits.
  const HoldDecision d = decide_hold({{kTeam, 100}}, 30, team_holds(80));
  EXPECT_FALSE(d.start);
  EXPECT_EQ(d.waiting_on, kTeam);
  // Its own budget allows 15 only: the 20 free in the team is enough.
  EXPECT_EQ(decide_hold({{kAgent, 15}, {kTeam, 100}}, 30, team_holds(80)).cents, 15.0);
}

// The budgets over a run and what each has left: the Agent's by its ledger
// figure (a re-applied Agent's status says nothing spent) and each team's.
TEST(BudgetRooms, TheAgentsAndEachTeamsBudgetWithWhatIsLeft) {
  const schedule::PolicyBudget team{"team", 100, 97, "2024-05", "ns"};
  const schedule::PolicyBudget uncapped{"cap-only", 0, 5000, "2024-05", "ns"};
  const auto lefts = [](const std::vector<BudgetRoom>& rooms) {
    std::vector<std::pair<std::string, double>> out;
    for (const BudgetRoom& room : rooms) out.emplace_back(room.pool, room.left_cents);
    return out;
  };
  using Lefts = std::vector<std::pair<std::string, double>>;
  EXPECT_TRUE(budget_rooms("ns/bot", {}, {}).empty());
  EXPECT_EQ(lefts(budget_rooms("ns/bot", {400, 20.5}, {})), (Lefts{{kAgent, 379.5}}));
  EXPECT_EQ(lefts(budget_rooms("ns/bot", {400, 20.5}, {team, uncapped})),
            (Lefts{{kAgent, 379.5}, {kTeam, 3.0}}));
  EXPECT_TRUE(budget_rooms("ns/bot", {}, {uncapped}).empty());
  EXPECT_EQ(lefts(budget_rooms("ns/bot", {10, 12}, {})), (Lefts{{kAgent, 0.0}})) << "never below 0";
}

// A daily budget is a room of its own, beside the month's: the Agent's in
// its day's pool, each team's in the policy's.
TEST(BudgetRooms, DailyBudgetsAreRoomsOfTheirOwn) {
  schedule::PolicyBudget team{"team", 100, 10, "2024-05", "ns"};
  team.daily_budget_cents = 8;
  team.spent_today_cents = 5;
  const auto rooms = budget_rooms("ns/bot", {400, 20.5, 30, 29.25}, {team});
  ASSERT_EQ(rooms.size(), 4u);
  EXPECT_EQ(rooms[1].pool, budget_day_pool_of_agent("ns/bot"));
  EXPECT_DOUBLE_EQ(rooms[1].left_cents, 0.75);
  EXPECT_EQ(rooms[3].pool, budget_day_pool_of_policy("ns", "team"));
  EXPECT_DOUBLE_EQ(rooms[3].left_cents, 3.0);
  EXPECT_TRUE(is_day_pool(rooms[1].pool) && is_day_pool(rooms[3].pool));
  EXPECT_FALSE(is_day_pool(rooms[0].pool) || is_day_pool(rooms[2].pool));
  // The day's room bounds the run: the runner is told so.
  const HoldDecision d = decide_hold(rooms, 50, [](const std::string&) { return 0.0; });
  ASSERT_TRUE(d.start && d.cents);
  EXPECT_DOUBLE_EQ(*d.cents, 0.75);
  EXPECT_EQ(d.bound_by, budget_day_pool_of_agent("ns/bot"));
  // A team's spend is subtracted unrounded: 0.995 cents spent of 1 leaves 0.005.
  schedule::PolicyBudget nearly{"nearly", 1, 0, "2024-05", "ns"};
  nearly.exact_spent_cents = 0.995;
  EXPECT_NEAR(budget_rooms("ns/bot", {}, {nearly})[0].left_cents, 0.005, 1e-9);
  // Control: a worst case under every room is bound by nothing.
  EXPECT_TRUE(decide_hold(rooms, 0.5, [](const std::string&) { return 0.0; }).bound_by.empty());
}

TEST(RunWorstCase, BoundedByTokensPerRunCentsAndTokenCap) {
  AgentSpec spec;
  spec.max_tokens = 1000;
  const Pricing pricing{100, 400};
  const double by_bounds = run_worst_case_cents(spec, pricing, 0);
  EXPECT_GT(by_bounds, 1000.0);
  // 10,000 tokens at the dearest price (400 per million): 4 cents.
  EXPECT_DOUBLE_EQ(run_worst_case_cents(spec, pricing, 10'000), 4.0);
  spec.per_run_cents = 2.5;
  EXPECT_DOUBLE_EQ(run_worst_case_cents(spec, pricing, 10'000), 2.5);
  EXPECT_DOUBLE_EQ(run_worst_case_cents(spec, Pricing{}, 0), 0.0);
}

TEST(HoldCents, RoundTripsAndRefusesJunk) {
  EXPECT_EQ(parse_hold_cents(format_hold_cents(12.5)), 12.5);
  for (const char* junk : {"", "-1", "nan", "inf", "1e999", "12 ", "x"}) {
    EXPECT_FALSE(parse_hold_cents(junk).has_value()) << junk;
  }
}

// Workers starting runs of one team in any order: what is held never
// passes what the budget has left, and every run ends with its cents
// released. The control: deciding without the holds gives away more.
TEST(BudgetHolds, RunsStartedTogetherNeverHoldMoreThanTheRoomLeft) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    BudgetHolds holds;
    const double left = std::uniform_real_distribution<double>(0, 100)(rng);
    double given = 0, given_without_holds = 0;
    std::vector<std::string> started;
    for (int i = 0; i < 20; ++i) {
      const std::string run = "ns/r" + std::to_string(i);
      const double worst = std::uniform_real_distribution<double>(1, 40)(rng);
      const HoldDecision d =
          holds.take(run, "ns/a" + std::to_string(i % 4), {{kTeam, left}}, worst);
      given_without_holds += *decide_hold({{kTeam, left}}, worst, none).cents;
      if (!d.start) continue;
      given += *d.cents;
      started.push_back(run);
      ASSERT_LE(holds.held(kTeam), left + 1e-9) << trial;
    }
    EXPECT_NEAR(holds.held(kTeam), given, 1e-9);
    if (trial == 0) {
      EXPECT_GT(given_without_holds, left) << "the control would not see the harm";
    }
    for (const std::string& run : started) holds.release(run);
    EXPECT_EQ(holds.size(), 0u);
    EXPECT_EQ(holds.held(kTeam), 0.0);
  }
}

TEST(BudgetHolds, TakingAgainReplacesTheRunsOwnHoldAndKeepOnlyEndsTheRest) {
  BudgetHolds holds;
  ASSERT_EQ(holds.take("ns/r1", "ns/a", {{kTeam, 50}}, 30).cents, 30.0);
  // The same run asks again (its Job create failed): it is not held twice.
  ASSERT_EQ(holds.take("ns/r1", "ns/a", {{kTeam, 50}}, 30).cents, 30.0);
  EXPECT_EQ(holds.held(kTeam), 30.0);
  ASSERT_EQ(holds.take("ns/r2", "ns/b", {{kTeam, 50}}, 20).cents, 20.0);
  EXPECT_FALSE(holds.take("ns/r3", "ns/b", {{kTeam, 50}}, 20).start);
  holds.keep_only("ns/a", {});  // r1 was charged or deleted
  EXPECT_EQ(holds.held(kTeam), 20.0);
  EXPECT_EQ(holds.take("ns/r3", "ns/b", {{kTeam, 50}}, 20).cents, 20.0);
  holds.keep_only("ns/b", {"ns/r3"});
  EXPECT_EQ(holds.held(kTeam), 20.0);
  // A restart: a hold read from a Job is kept once.
  holds.restore("ns/r3", {"ns/b", {kTeam}, 20});
  holds.restore("ns/r4", {"ns/c", {kTeam}, 5});
  EXPECT_EQ(holds.held(kTeam), 25.0);
}

}  // namespace
}  // namespace hb::controllers
