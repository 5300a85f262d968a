#include "controllers/schedule/slots.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <set>
#include <vector>

#include "tests/unit/schedule/test_time.h"

namespace hb::schedule {
namespace {

using std::chrono::seconds;
using testing::utc;

Schedule interval(std::string_view text) {
  auto r = parse_schedule({text, "", "", "", ""});
  EXPECT_TRUE(r.ok()) << r.error;
  return r.value.value_or(Schedule{IntervalSchedule{60}});
}

Schedule cron(std::string_view text) {
  auto r = parse_schedule({"", text, "", "", ""});
  EXPECT_TRUE(r.ok()) << r.error;
  return r.value.value_or(Schedule{IntervalSchedule{60}});
}

std::string str(std::optional<TimePoint> t) {
  return t ? format_rfc3339(*t) : "none";
}

// ---- parse_schedule ----

TEST(ParseSchedule, ExactlyOneOfIntervalAndSchedule) {
  EXPECT_EQ(parse_schedule({"5m", "0 * * * *", "", "", ""}).error,
            "spec.heartbeat.interval and spec.heartbeat.schedule are both set; set exactly one");
  const auto neither = parse_schedule({"", "", "", "", ""});
  EXPECT_FALSE(neither.ok());
  EXPECT_NE(neither.error.find("spec.heartbeat.interval"), std::string::npos);
  EXPECT_NE(neither.error.find("spec.heartbeat.schedule"), std::string::npos);
}

TEST(ParseSchedule, IntervalIsParsedAndChecked) {
  EXPECT_EQ(std::get<IntervalSchedule>(interval("2h30m")).seconds, 9000);
  EXPECT_EQ(parse_schedule({"29s", "", "", "", ""}).error,
            "spec.heartbeat.interval 29s is shorter than the minimum 30s");
  EXPECT_EQ(parse_schedule({"5x", "", "", "", ""}).error,
            "spec.heartbeat.interval \"5x\": unknown unit 'x'; use a duration like 30s, 5m, 1h or "
            "2h30m");
}

TEST(ParseSchedule, CronIsParsedAndMustBeAbleToFire) {
  EXPECT_TRUE(std::holds_alternative<CronSchedule>(cron("@hourly")));
  EXPECT_EQ(parse_schedule({"", "61 * * * *", "", "", ""}).error,
            "spec.heartbeat.schedule \"61 * * * *\": minute 61 out of range 0-59");
  const auto never = parse_schedule({"", "0 0 30 2 *", "", "", ""});
  EXPECT_FALSE(never.ok());
  EXPECT_EQ(never.error.rfind("spec.heartbeat.schedule \"0 0 30 2 *\": never fires", 0), 0u);
}

// ---- interval slots ----

const TimePoint kCreated = utc("2024-03-01T10:00:00Z");

TEST(IntervalSlots, FirstHeartbeatOneIntervalAfterCreationNotAtCreation) {
  const Schedule s = interval("5m");
  for (const char* now : {"2024-03-01T10:00:00Z", "2024-03-01T10:04:59Z"}) {
    const SlotDecision d = decide_slot(s, kCreated, std::nullopt, std::nullopt, utc(now));
    EXPECT_FALSE(d.run_slot) << now;
    EXPECT_EQ(str(d.next_slot), "2024-03-01T10:05:00Z") << now;
    EXPECT_EQ(d.missed_count, 0);
  }
  const SlotDecision due =
      decide_slot(s, kCreated, std::nullopt, std::nullopt, utc("2024-03-01T10:05:00Z"));
  EXPECT_EQ(str(due.run_slot), "2024-03-01T10:05:00Z");
  EXPECT_EQ(str(due.next_slot), "2024-03-01T10:10:00Z");
  EXPECT_EQ(str(first_slot_after(s, kCreated, kCreated)), "2024-03-01T10:05:00Z");
}

TEST(IntervalSlots, AnchoredToCreationIncludingOddSeconds) {
  const Schedule s = interval("1m");
  const TimePoint created = utc("2024-03-01T10:00:07Z");
  const SlotDecision d =
      decide_slot(s, created, std::nullopt, std::nullopt, utc("2024-03-01T10:01:30Z"));
  EXPECT_EQ(str(d.run_slot), "2024-03-01T10:01:07Z");
  EXPECT_EQ(str(d.next_slot), "2024-03-01T10:02:07Z");
}

// A reconciler loop on a fake clock: it wakes late, runs take a while, yet the
// recorded slots stay exactly on created + k * interval.
TEST(IntervalSlots, RunLengthAndLateWakeupsDoNotDrift) {
  const Schedule s = interval("5m");
  std::optional<TimePoint> last;
  TimePoint now = kCreated;
  std::vector<std::string> runs;
  for (int i = 0; i < 40 && runs.size() < 6; ++i) {
    const SlotDecision d = decide_slot(s, kCreated, last, std::nullopt, now);
    if (d.run_slot) {
      runs.push_back(format_rfc3339(*d.run_slot));
      last = d.run_slot;
      now += seconds{97};  // the run takes a while; the operator reconciles after it
      continue;
    }
    ASSERT_TRUE(d.next_slot);
    now = *d.next_slot + seconds{3};  // requeue fires a little late
  }
  EXPECT_EQ(runs, (std::vector<std::string>{"2024-03-01T10:05:00Z", "2024-03-01T10:10:00Z",
                                            "2024-03-01T10:15:00Z", "2024-03-01T10:20:00Z",
                                            "2024-03-01T10:25:00Z", "2024-03-01T10:30:00Z"}));
}

TEST(IntervalSlots, SameSlotIsNotRunTwice) {
  const Schedule s = interval("5m");
  const TimePoint last = utc("2024-03-01T10:05:00Z");
  const SlotDecision d = decide_slot(s, kCreated, last, std::nullopt, utc("2024-03-01T10:07:00Z"));
  EXPECT_FALSE(d.run_slot);
  EXPECT_EQ(str(d.next_slot), "2024-03-01T10:10:00Z");
}

TEST(IntervalSlots, AfterLongDowntimeOnlyTheMostRecentSlot) {
  const Schedule s = interval("5m");
  const SlotDecision d = decide_slot(s, kCreated, utc("2024-03-01T10:05:00Z"), std::nullopt,
                                     utc("2024-03-04T10:07:30Z"));
  EXPECT_EQ(str(d.run_slot), "2024-03-04T10:05:00Z");
  EXPECT_EQ(str(d.next_slot), "2024-03-04T10:10:00Z");
  EXPECT_FALSE(d.missed_too_late);
  // 10:10 on day 1 .. 10:05 on day 4 is 3 days * 288 slots; all but the one run are missed.
  EXPECT_EQ(d.missed_count, 3 * 288 - 1);
}

TEST(IntervalSlots, HugeGapIsConstantTime) {
  const Schedule s = interval("30s");
  const SlotDecision d = decide_slot(s, utc("2020-01-01T00:00:00Z"), std::nullopt, std::nullopt,
                                     utc("2029-12-31T23:59:59Z"));
  EXPECT_EQ(str(d.run_slot), "2029-12-31T23:59:30Z");
  EXPECT_EQ(str(d.next_slot), "2030-01-01T00:00:00Z");
  const int64_t slots = (utc("2029-12-31T23:59:30Z") - utc("2020-01-01T00:00:00Z")) / seconds{30};
  EXPECT_EQ(d.missed_count, slots - 1);
}

TEST(IntervalSlots, StartingDeadlineSkipsASlotThatIsTooOld) {
  const Schedule s = interval("5m");
  const TimePoint last = utc("2024-03-01T10:00:00Z");
  const TimePoint now = utc("2024-03-01T10:07:00Z");  // slot 10:05 is 120s old
  const SlotDecision late = decide_slot(s, kCreated, last, int64_t{60}, now);
  EXPECT_FALSE(late.run_slot);
  EXPECT_TRUE(late.missed_too_late);
  EXPECT_EQ(late.missed_count, 1);
  EXPECT_EQ(str(late.next_slot), "2024-03-01T10:10:00Z");

  const SlotDecision exact = decide_slot(s, kCreated, last, int64_t{120}, now);
  EXPECT_EQ(str(exact.run_slot), "2024-03-01T10:05:00Z");
  EXPECT_FALSE(exact.missed_too_late);

  const SlotDecision fine = decide_slot(s, kCreated, last, int64_t{200}, now);
  EXPECT_EQ(str(fine.run_slot), "2024-03-01T10:05:00Z");
  EXPECT_EQ(fine.missed_count, 0);
}

TEST(IntervalSlots, StartingDeadlineAfterDowntimeSkipsEverything) {
  const SlotDecision d = decide_slot(interval("5m"), kCreated, utc("2024-03-01T10:05:00Z"),
                                     int64_t{30}, utc("2024-03-01T11:03:00Z"));
  EXPECT_FALSE(d.run_slot);
  EXPECT_TRUE(d.missed_too_late);
  EXPECT_EQ(d.missed_count, 11);  // 10:10 .. 11:00
  EXPECT_EQ(str(d.next_slot), "2024-03-01T11:05:00Z");
}

TEST(IntervalSlots, ClockJumpingForwardRunsOnlyTheLatestSlot) {
  const Schedule s = interval("5m");
  const TimePoint last = utc("2024-03-01T10:05:00Z");
  const SlotDecision d = decide_slot(s, kCreated, last, std::nullopt, utc("2024-03-01T11:00:01Z"));
  EXPECT_EQ(str(d.run_slot), "2024-03-01T11:00:00Z");
  EXPECT_EQ(d.missed_count, 10);
  EXPECT_EQ(str(d.next_slot), "2024-03-01T11:05:00Z");
}

TEST(IntervalSlots, ClockJumpingBackwardSchedulesNothingAndStaysAfterLast) {
  const Schedule s = interval("5m");
  const TimePoint last = utc("2024-03-01T10:10:00Z");
  const SlotDecision d = decide_slot(s, kCreated, last, std::nullopt, utc("2024-03-01T10:02:00Z"));
  EXPECT_FALSE(d.run_slot);
  EXPECT_FALSE(d.missed_too_late);
  EXPECT_EQ(d.missed_count, 0);
  EXPECT_EQ(str(d.next_slot), "2024-03-01T10:15:00Z");

  // Even before the agent's creation.
  const SlotDecision before =
      decide_slot(s, kCreated, std::nullopt, std::nullopt, utc("2024-03-01T09:00:00Z"));
  EXPECT_FALSE(before.run_slot);
  EXPECT_EQ(str(before.next_slot), "2024-03-01T10:05:00Z");
}

TEST(IntervalSlots, ChangedIntervalReanchorsOnCreation) {
  // lastScheduleTime from an old 7m interval; the new 5m grid is still created + k*5m.
  const SlotDecision d = decide_slot(interval("5m"), kCreated, utc("2024-03-01T10:07:00Z"),
                                     std::nullopt, utc("2024-03-01T10:08:00Z"));
  EXPECT_FALSE(d.run_slot);
  EXPECT_EQ(str(d.next_slot), "2024-03-01T10:10:00Z");
}

// ---- cron slots ----

const TimePoint kCronCreated = utc("2024-01-01T00:00:30Z");

TEST(CronSlots, FirstSlotIsTheFirstMatchAfterCreation) {
  const Schedule s = cron("0 * * * *");
  const SlotDecision early =
      decide_slot(s, kCronCreated, std::nullopt, std::nullopt, utc("2024-01-01T00:30:00Z"));
  EXPECT_FALSE(early.run_slot);
  EXPECT_EQ(str(early.next_slot), "2024-01-01T01:00:00Z");
  const SlotDecision due =
      decide_slot(s, kCronCreated, std::nullopt, std::nullopt, utc("2024-01-01T01:00:10Z"));
  EXPECT_EQ(str(due.run_slot), "2024-01-01T01:00:00Z");
  EXPECT_EQ(str(due.next_slot), "2024-01-01T02:00:00Z");
  EXPECT_EQ(due.missed_count, 0);
  // Created exactly on a matching minute: that minute is not a slot.
  EXPECT_EQ(str(first_slot_after(s, utc("2024-01-01T05:00:00Z"), utc("2024-01-01T05:00:00Z"))),
            "2024-01-01T06:00:00Z");
}

TEST(CronSlots, AfterDowntimeOnlyTheMostRecentSlot) {
  const SlotDecision d = decide_slot(cron("0 * * * *"), kCronCreated, utc("2024-01-01T01:00:00Z"),
                                     std::nullopt, utc("2024-01-01T05:30:00Z"));
  EXPECT_EQ(str(d.run_slot), "2024-01-01T05:00:00Z");
  EXPECT_EQ(d.missed_count, 3);  // 02:00, 03:00, 04:00
  EXPECT_EQ(str(d.next_slot), "2024-01-01T06:00:00Z");
}

TEST(CronSlots, StartingDeadlineSkip) {
  const Schedule s = cron("0 * * * *");
  const TimePoint last = utc("2024-01-01T01:00:00Z");
  const SlotDecision late =
      decide_slot(s, kCronCreated, last, int64_t{600}, utc("2024-01-01T02:15:00Z"));
  EXPECT_FALSE(late.run_slot);
  EXPECT_TRUE(late.missed_too_late);
  EXPECT_EQ(late.missed_count, 1);
  EXPECT_EQ(str(late.next_slot), "2024-01-01T03:00:00Z");
  const SlotDecision ok =
      decide_slot(s, kCronCreated, last, int64_t{600}, utc("2024-01-01T02:05:00Z"));
  EXPECT_EQ(str(ok.run_slot), "2024-01-01T02:00:00Z");
}

TEST(CronSlots, HugeGapIsBoundedAndExactAboutTheSlot) {
  const SlotDecision d = decide_slot(cron("* * * * *"), kCronCreated, std::nullopt, std::nullopt,
                                     utc("2025-06-15T08:42:17Z"));
  EXPECT_EQ(str(d.run_slot), "2025-06-15T08:42:00Z");
  EXPECT_EQ(d.missed_count, kCronMissedSlotsScanMax);  // saturated: "at least"
  EXPECT_EQ(str(d.next_slot), "2025-06-15T08:43:00Z");
}

TEST(CronSlots, IrregularRuleAfterDowntime) {
  // Weekdays at 06:30, 10:30, 14:30 (the shape that trips arithmetic shortcuts).
  const SlotDecision d = decide_slot(cron("30 6-16/4 * * 1-5"), kCronCreated,
                                     utc("2024-01-05T14:30:00Z"), std::nullopt,
                                     utc("2024-01-08T12:00:00Z"));  // Fri -> Mon
  EXPECT_EQ(str(d.run_slot), "2024-01-08T10:30:00Z");
  EXPECT_EQ(d.missed_count, 1);  // Mon 06:30
  EXPECT_EQ(str(d.next_slot), "2024-01-08T14:30:00Z");
}

TEST(CronSlots, ClockJumpingBackward) {
  const Schedule s = cron("0 * * * *");
  const TimePoint last = utc("2024-01-01T05:00:00Z");
  const SlotDecision d =
      decide_slot(s, kCronCreated, last, std::nullopt, utc("2024-01-01T03:30:00Z"));
  EXPECT_FALSE(d.run_slot);
  EXPECT_EQ(d.missed_count, 0);
  EXPECT_EQ(str(d.next_slot), "2024-01-01T06:00:00Z");
}

TEST(CronSlots, YearRollover) {
  const SlotDecision d = decide_slot(cron("@yearly"), utc("2024-06-01T00:00:00Z"), std::nullopt,
                                     std::nullopt, utc("2025-01-01T00:00:05Z"));
  EXPECT_EQ(str(d.run_slot), "2025-01-01T00:00:00Z");
  EXPECT_EQ(str(d.next_slot), "2026-01-01T00:00:00Z");
}

// ---- interval spread: a fleet created in one second does not fire as one ----

IntervalSchedule spread(std::string_view every, std::string_view how, std::string_view key) {
  auto r = parse_schedule({every, "", how, key, ""});
  EXPECT_TRUE(r.ok()) << r.error;
  const auto* iv = r.value ? std::get_if<IntervalSchedule>(&*r.value) : nullptr;
  return iv != nullptr ? *iv : IntervalSchedule{60};
}

TEST(IntervalSpread, NoneAndUnsetKeepOneIntervalAfterCreation) {
  EXPECT_EQ(spread("5m", "", "ns/a").offset_seconds, 0);
  EXPECT_EQ(spread("5m", "None", "ns/a").offset_seconds, 0);
  EXPECT_EQ(spread("5m", "0s", "ns/a").offset_seconds, 0);
}

TEST(IntervalSpread, AutoIsAStableOffsetWithinOneInterval) {
  const IntervalSchedule a = spread("1h", "Auto", "agents/scribe");
  EXPECT_EQ(a.offset_seconds, spread("1h", "Auto", "agents/scribe").offset_seconds);
  EXPECT_GT(a.offset_seconds, 0);  // this key's offset; 0 would mean one interval
  EXPECT_LT(a.offset_seconds, 3600);
  // The first slot comes at created + offset, then every interval, forever.
  const Schedule s = a;
  const TimePoint first = kCreated + seconds{a.offset_seconds};
  EXPECT_EQ(str(first_slot_after(s, kCreated, kCreated)), str(first));
  const SlotDecision before =
      decide_slot(s, kCreated, std::nullopt, std::nullopt, first - seconds{1});
  EXPECT_FALSE(before.run_slot);
  EXPECT_EQ(str(before.next_slot), str(first));
  const SlotDecision at = decide_slot(s, kCreated, std::nullopt, std::nullopt, first);
  EXPECT_EQ(str(at.run_slot), str(first));
  EXPECT_EQ(str(at.next_slot), str(first + std::chrono::hours{1}));
  // Three hours of downtime later: only the latest slot, on the same grid.
  const SlotDecision late =
      decide_slot(s, kCreated, first, std::nullopt, first + std::chrono::hours{3} + seconds{5});
  EXPECT_EQ(str(late.run_slot), str(first + std::chrono::hours{3}));
  EXPECT_EQ(late.missed_count, 2);
  // The slot just run is not run again.
  const SlotDecision again = decide_slot(s, kCreated, first, std::nullopt, first + seconds{30});
  EXPECT_FALSE(again.run_slot);
}

TEST(IntervalSpread, AFleetAppliedInOneCommitSpreadsOverTheInterval) {
  // 1,000 Agents created in the same second, interval 1h: without a spread
  // all fire in one second; with Auto no minute holds a herd (a fair share is 16.7).
  std::array<int, 60> per_minute{};
  std::set<int64_t> seconds_used;
  for (int i = 0; i < 1000; ++i) {
    const IntervalSchedule iv = spread("1h", "Auto", "team/agent-" + std::to_string(i));
    ASSERT_LT(iv.offset_seconds, 3600);
    ++per_minute[static_cast<std::size_t>(iv.offset_seconds / 60)];
    seconds_used.insert(iv.offset_seconds);
  }
  EXPECT_EQ(std::count(per_minute.begin(), per_minute.end(), 0), 0);
  EXPECT_LE(*std::max_element(per_minute.begin(), per_minute.end()), 35);
  EXPECT_GT(seconds_used.size(), 800u);
}

TEST(IntervalSpread, ADurationBoundsTheOffset) {
  for (int i = 0; i < 200; ++i) {
    const IntervalSchedule iv = spread("1h", "10m", "ns/a" + std::to_string(i));
    EXPECT_LT(iv.offset_seconds, 600);
  }
  EXPECT_LT(spread("1h", "1h", "ns/x").offset_seconds, 3600);
}

TEST(IntervalSpread, BadSpreadNamesTheFieldAndTheFix) {
  EXPECT_EQ(parse_schedule({"5m", "", "6m", "ns/a", ""}).error,
            "spec.heartbeat.spread \"6m\": longer than the interval 5m; use at most the "
            "interval, or Auto");
  EXPECT_EQ(parse_schedule({"5m", "", "auto", "ns/a", ""}).error,
            "spec.heartbeat.spread \"auto\": expected a number at 'a'; use a duration like 30s, "
            "5m, 1h or "
            "2h30m; or use Auto (within one interval) or None");
  EXPECT_EQ(parse_schedule({"", "0 * * * *", "Auto", "ns/a", ""}).error,
            "spec.heartbeat.spread \"Auto\": applies to an interval; spread a schedule with H "
            "instead, e.g. \"H * * * *\" or \"H(0-29) 9 * * 1-5\"");
  EXPECT_TRUE(parse_schedule({"", "0 * * * *", "None", "ns/a", ""}).ok());
}

TEST(CronHashedSlots, TheKeyPicksTheMinute) {
  const auto minute_of = [](std::string_view key) {
    auto r = parse_schedule({"", "H * * * *", "", key, ""});
    EXPECT_TRUE(r.ok()) << r.error;
    const auto next = first_slot_after(*r.value, kCreated, kCreated);
    return next ? (*next - kCreated) : seconds{-1};
  };
  EXPECT_EQ(minute_of("agents/scribe"), minute_of("agents/scribe"));
  EXPECT_EQ(minute_of("agents/scribe"), std::chrono::minutes{6});  // cron_test's pinned minute
}

}  // namespace
}  // namespace hb::schedule
