// Exactly-once spend: the ledger alone, and a simulation that crashes or
// conflicts at every point between the two writes.
#include "controllers/model/spend_ledger.h"

#include <gtest/gtest.h>

#include <random>

#include "tests/unit/controllers/fixtures.h"

namespace hb::controllers {
namespace {

using namespace testing;

FinishedRun finished(const std::string& name, double cost, const char* when,
                     std::optional<TimePoint> pause = std::nullopt) {
  FinishedRun f;
  f.name = name;
  f.usage.cost_cents = cost;
  f.usage.input_tokens = 10;
  f.usage.output_tokens = 1;
  f.finished_at = at(when);
  f.pause_until = pause;
  return f;
}

TEST(SpendLedger, CountsOnceAndMarks) {
  LedgerInput in;
  in.spend = {"2024-05", 10, 100, 10};
  in.finished = {finished("a", 2.5, "2024-05-01T12:00:00Z")};
  in.now = at("2024-05-01T12:01:00Z");
  LedgerResult out = apply_ledger(in);
  EXPECT_DOUBLE_EQ(out.spend.cents, 12.5);
  EXPECT_EQ(out.spend.input_tokens, 110);
  EXPECT_EQ(out.counted, std::vector<std::string>{"a"});
  EXPECT_EQ(out.mark, std::vector<std::string>{"a"});
  EXPECT_TRUE(out.raised.empty());
  EXPECT_EQ(out.recent.front().name, "a");
  EXPECT_EQ(*out.last_heartbeat, at("2024-05-01T12:00:00Z"));

  // The mark write was lost: the same run comes back unmarked.
  in.spend = out.spend;
  in.recent = out.recent;
  LedgerResult again = apply_ledger(in);
  EXPECT_DOUBLE_EQ(again.spend.cents, 12.5);
  EXPECT_TRUE(again.counted.empty());
  EXPECT_EQ(again.mark, std::vector<std::string>{"a"});
}

// Found by the simulation under clock jumps: a killed run was counted at its
// last beat's figure, the mark write failed, and the next pass read its
// result (twice the figure). The difference is charged once, never lost,
// and the run records what its agent's spend holds for it.
TEST(SpendLedger, ARunObservedHigherAfterItWasCountedIsChargedTheDifferenceOnce) {
  LedgerInput in;
  in.spend = {"2024-05", 10, 100, 10};
  in.finished = {finished("a", 1.0, "2024-05-01T12:00:00Z")};
  in.now = at("2024-05-01T12:01:00Z");
  const LedgerResult first = apply_ledger(in);
  ASSERT_DOUBLE_EQ(first.spend.cents, 11.0);

  in.spend = first.spend;  // the mark write was lost; the result arrived
  in.recent = first.recent;
  in.finished = {finished("a", 2.5, "2024-05-01T12:00:00Z")};
  const LedgerResult higher = apply_ledger(in);
  EXPECT_DOUBLE_EQ(higher.spend.cents, 12.5);
  EXPECT_EQ(higher.counted, std::vector<std::string>{"a"}) << "the agent write comes first";
  // Only right if the run is still unmarked: the shell confirms it (a cache
  // behind a mark that landed would otherwise charge twice).
  EXPECT_EQ(higher.raised, std::vector<std::string>{"a"});
  EXPECT_EQ(higher.mark, std::vector<std::string>{"a"});
  EXPECT_DOUBLE_EQ(higher.recent.front().cost_cents, 2.5);
  EXPECT_DOUBLE_EQ(charged_cents(higher.recent, "a", 2.5), 2.5);

  in.spend = higher.spend;  // that mark was lost too: nothing more to charge
  in.recent = higher.recent;
  const LedgerResult again = apply_ledger(in);
  EXPECT_DOUBLE_EQ(again.spend.cents, 12.5);
  EXPECT_TRUE(again.counted.empty());
  EXPECT_TRUE(again.raised.empty());

  in.finished = {finished("a", 0.5, "2024-05-01T12:00:00Z")};  // observed lower: kept
  const LedgerResult lower = apply_ledger(in);
  EXPECT_DOUBLE_EQ(lower.spend.cents, 12.5);
  EXPECT_TRUE(lower.counted.empty());
  EXPECT_DOUBLE_EQ(charged_cents(lower.recent, "a", 0.5), 2.5) << "the run records the charge";
  EXPECT_DOUBLE_EQ(charged_cents(lower.recent, "b", 0.5), 0.5) << "not counted: as observed";
}

TEST(SpendLedger, ManySmallCostsSumWithoutFloatingPointNoise) {
  LedgerInput in;
  in.now = at("2024-05-20T00:00:00Z");
  in.spend.period = "2024-05";
  for (int i = 0; i < 1000; ++i) {
    FinishedRun run;
    run.name = "r" + std::to_string(i);
    run.usage.cost_cents = 0.1;
    run.finished_at = at("2024-05-19T00:00:00Z") + std::chrono::seconds(i);
    in.finished = {run};
    LedgerResult out = apply_ledger(in);
    in.spend = out.spend;
    in.recent = out.recent;
  }
  // Summed naively, 1000 x 0.1 is 99.9999999999986.
  EXPECT_EQ(to_json(in.spend)["cents"].dump(), "100.0");
  EXPECT_EQ(round_to_spend_resolution(0.1 + 0.2), 0.3);
}

TEST(SpendLedger, MonthRolloverResetsSpend) {
  LedgerInput in;
  in.spend = {"2024-04", 999, 5, 5};
  in.now = at("2024-05-01T00:00:01Z");
  LedgerResult out = apply_ledger(in);
  EXPECT_EQ(out.spend.period, "2024-05");
  EXPECT_EQ(out.spend.cents, 0);
  EXPECT_EQ(out.spend.input_tokens, 0);
}

// The month's figure counts a run admitted this month whatever month its
// finish was stamped in, and not one admitted last month.
TEST(SpendLedger, ARunCountsInTheMonthItWasAdmittedIn) {
  LedgerInput in;
  in.spend = {"2024-05", 0, 0, 0};
  in.now = at("2024-05-01T00:00:30Z");
  FinishedRun admitted_now = finished("now", 2, "2024-04-30T23:59:54Z");
  admitted_now.admitted_at = at("2024-05-01T00:00:00Z");
  FinishedRun admitted_before = finished("before", 5, "2024-05-01T00:00:10Z");
  admitted_before.admitted_at = at("2024-04-30T23:50:00Z");
  in.finished = {admitted_now, admitted_before};
  const LedgerResult out = apply_ledger(in);
  EXPECT_EQ(out.spend.cents, 2);
  EXPECT_EQ(out.counted.size(), 2u) << "both are counted, each in its own month";
}

TEST(SpendLedger, RecentRunsAreBoundedNewestFirst) {
  LedgerInput in;
  in.now = at("2024-05-02T00:00:00Z");
  for (int i = 0; i < 15; ++i) {
    in.finished.push_back(finished(
        "r" + std::to_string(i), 1,
        ("2024-05-01T12:" + std::string(i < 10 ? "0" : "") + std::to_string(i) + ":00Z").c_str()));
  }
  LedgerResult out = apply_ledger(in);
  EXPECT_EQ(out.recent.size(), kRecentRunsMax);
  EXPECT_EQ(out.recent.front().name, "r14");
  EXPECT_DOUBLE_EQ(out.spend.cents, 15);
}

TEST(SpendLedger, PausedUntilTakesTheLatest) {
  LedgerInput in;
  in.now = at("2024-05-01T12:00:00Z");
  in.paused_until = at("2024-05-01T12:30:00Z");
  in.finished = {finished("a", 0, "2024-05-01T11:59:00Z", at("2024-05-01T12:10:00Z"))};
  EXPECT_EQ(*apply_ledger(in).paused_until, at("2024-05-01T12:30:00Z"));
  in.finished = {finished("a", 0, "2024-05-01T11:59:00Z", at("2024-05-01T12:45:00Z"))};
  EXPECT_EQ(*apply_ledger(in).paused_until, at("2024-05-01T12:45:00Z"));
}

// A simulated API server holding the agent status (with a resourceVersion)
// and each run's costRecorded, and an operator that crashes or loses a
// conflict at random points. Whatever happens, spend ends exactly at the sum.
TEST(SpendLedger, SimulationNeverDoubleCountsAcrossCrashesAndConflicts) {
  std::mt19937 rng(42);
  for (int trial = 0; trial < 200; ++trial) {
    struct Stored {
      Spend spend{"2024-05", 0, 0, 0};
      std::vector<LedgerEntry> recent;
      int64_t rv = 1;
    } server, previous;
    std::map<std::string, bool> marked;
    std::vector<FinishedRun> runs;
    double expected = 0;
    const int run_count = 1 + static_cast<int>(rng() % 25);
    int steps = 0;
    for (int i = 0; i < run_count; ++i) {
      runs.push_back(finished("run-" + std::to_string(i), 0.25 * (i + 1), "2024-05-01T12:00:00Z"));
      runs.back().finished_at += std::chrono::minutes(i);
      marked[runs.back().name] = false;
      expected += 0.25 * (i + 1);
      // Reconcile until this run is marked (one run at a time, as the
      // decision guarantees: a new run only starts once earlier ones are marked).
      while (!marked[runs.back().name]) {
        ASSERT_LT(++steps, 10000);
        // The informer's copy: usually current, sometimes one write behind.
        Stored cached = rng() % 4 == 0 ? previous : server;
        LedgerInput in;
        in.spend = cached.spend;
        in.recent = cached.recent;
        in.now = at("2024-05-20T00:00:00Z");
        for (const FinishedRun& r : runs) {
          if (!marked[r.name]) in.finished.push_back(r);
        }
        LedgerResult out = apply_ledger(in);
        if (!out.counted.empty()) {
          // Conditional write: 409 when the cache was stale, or a crash before it lands.
          if (cached.rv != server.rv) continue;
          if (rng() % 5 == 0) continue;  // kill -9 before the write
          previous = server;
          server.spend = out.spend;
          server.recent = out.recent;
          server.rv += 1;
          if (rng() % 5 == 0) continue;  // kill -9 after the write, before the marks
        }
        for (const std::string& name : out.mark) {
          if (rng() % 6 == 0) break;  // crash mid-way through the marks
          marked[name] = true;
        }
      }
    }
    EXPECT_NEAR(server.spend.cents, expected, 1e-9) << "trial " << trial;
  }
}

}  // namespace
}  // namespace hb::controllers
