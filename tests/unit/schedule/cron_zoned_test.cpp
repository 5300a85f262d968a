// Cron in an IANA time zone: local times, the skipped hour of spring
// (runs once, when the clocks jump), the repeated hour of autumn (runs once,
// the first time), and next/latest agreeing with each other everywhere.
#include "controllers/schedule/cron_zoned.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "controllers/schedule/slots.h"
#include "controllers/schedule/time_zone.h"
#include "tests/unit/schedule/cron_firings.h"
#include "tests/unit/schedule/test_time.h"

namespace hb::schedule {
namespace {

using testing::firings;
using testing::utc;

CronSchedule zoned(std::string_view text, std::string_view zone) {
  auto r = parse_schedule({"", text, "", "ns/a", zone});
  EXPECT_TRUE(r.ok()) << r.error;
  const auto* cron = r.value ? std::get_if<CronSchedule>(&*r.value) : nullptr;
  return cron != nullptr ? *cron : CronSchedule{};
}

std::string latest(const CronSchedule& c, const std::string& at) {
  const auto l = latest_at_or_before(c, utc(at));
  return l ? format_rfc3339(*l) : "none";
}

using Strings = std::vector<std::string>;

// Berlin in 2026: CEST from 2026-03-29T01:00Z (02:00 -> 03:00 local) to
// 2026-10-25T01:00Z (03:00 -> 02:00 local).

TEST(CronZoned, LocalTimeFollowsTheOffset) {
  EXPECT_EQ(firings(zoned("0 9 * * *", "Europe/Berlin"), "2026-03-27T00:00:00Z", 4),
            Strings({"2026-03-27T08:00:00Z", "2026-03-28T08:00:00Z", "2026-03-29T07:00:00Z",
                     "2026-03-30T07:00:00Z"}));
  EXPECT_EQ(firings(zoned("0 9 * * 1-5", "America/New_York"), "2026-11-01T00:00:00Z", 2),
            Strings({"2026-11-02T14:00:00Z", "2026-11-03T14:00:00Z"}));
  EXPECT_EQ(firings(zoned("30 9 * * *", "Asia/Kolkata"), "2026-06-01T00:00:00Z", 1),
            Strings({"2026-06-01T04:00:00Z"}));
}

TEST(CronZoned, ASkippedLocalTimeRunsOnceWhenTheClocksJump) {
  EXPECT_EQ(firings(zoned("30 2 * * *", "Europe/Berlin"), "2026-03-28T00:00:00Z", 3),
            Strings({"2026-03-28T01:30:00Z", "2026-03-29T01:00:00Z", "2026-03-30T00:30:00Z"}));
  // Four skipped times, one run.
  EXPECT_EQ(firings(zoned("*/15 2 * * *", "Europe/Berlin"), "2026-03-29T00:00:00Z", 2),
            Strings({"2026-03-29T01:00:00Z", "2026-03-30T00:00:00Z"}));
  // The skipped times and 03:00 itself are one run; 03:15 runs as usual.
  EXPECT_EQ(firings(zoned("*/15 2-3 * * *", "Europe/Berlin"), "2026-03-29T00:50:00Z", 3),
            Strings({"2026-03-29T01:00:00Z", "2026-03-29T01:15:00Z", "2026-03-29T01:30:00Z"}));
  EXPECT_EQ(latest(zoned("30 2 * * *", "Europe/Berlin"), "2026-03-29T01:05:00Z"),
            "2026-03-29T01:00:00Z");
  EXPECT_EQ(latest(zoned("30 2 * * *", "Europe/Berlin"), "2026-03-29T00:59:00Z"),
            "2026-03-28T01:30:00Z");
}

TEST(CronZoned, ARepeatedLocalTimeRunsOnceTheFirstTime) {
  EXPECT_EQ(firings(zoned("30 2 * * *", "Europe/Berlin"), "2026-10-24T00:00:00Z", 3),
            Strings({"2026-10-24T00:30:00Z", "2026-10-25T00:30:00Z", "2026-10-26T01:30:00Z"}));
  // 02:00 and 02:30 come round again at 01:00Z and 01:30Z: not run twice.
  EXPECT_EQ(firings(zoned("0,30 * * * *", "Europe/Berlin"), "2026-10-25T00:00:00Z", 3),
            Strings({"2026-10-25T00:30:00Z", "2026-10-25T02:00:00Z", "2026-10-25T02:30:00Z"}));
  // Asked during the second 02:40, the latest 02:30 is the first one.
  EXPECT_EQ(latest(zoned("30 2 * * *", "Europe/Berlin"), "2026-10-25T01:40:00Z"),
            "2026-10-25T00:30:00Z");
}

TEST(CronZoned, UtcByNameIsUtc) {
  for (const char* text : {"*/7 * * * *", "0 0 29 2 *", "15 3 * * 0", "H/5 H * * *"}) {
    const CronSchedule plain = zoned(text, "");
    const CronSchedule named = zoned(text, "Etc/UTC");
    EXPECT_EQ(plain.zone, nullptr);
    ASSERT_NE(named.zone, nullptr);
    EXPECT_EQ(firings(plain, "2026-03-29T00:00:00Z", 20),
              firings(named, "2026-03-29T00:00:00Z", 20))
        << text;
  }
  EXPECT_EQ(zoned("0 9 * * *", "UTC").zone, nullptr);
}

// Every firing next_after gives is one latest_at_or_before finds, nothing
// fires between two firings, and firings strictly increase: across the
// transitions of zones with 1 h, 30 min and no DST, and Samoa's skipped day.
TEST(CronZoned, NextAndLatestAgreeAcrossTransitions) {
  const std::vector<std::pair<const char*, const char*>> cases = {
      {"Europe/Berlin", "2026-03-28T12:00:00Z"},
      {"Europe/Berlin", "2026-10-24T12:00:00Z"},
      {"Australia/Lord_Howe", "2026-04-04T00:00:00Z"},
      {"Australia/Lord_Howe", "2026-10-03T00:00:00Z"},
      {"America/New_York", "2026-03-08T00:00:00Z"},
      {"Pacific/Apia", "2011-12-29T00:00:00Z"},
      {"Asia/Kolkata", "2026-03-28T12:00:00Z"},
  };
  const std::vector<const char*> rules = {"* * * * *",   "*/15 * * * *", "30 2 * * *",
                                          "0 * * * *",   "45 1-3 * * *", "0 0 * * *",
                                          "10 0 30 12 *"};
  for (const auto& [zone, from] : cases) {
    for (const char* rule : rules) {
      const CronSchedule c = zoned(rule, zone);
      TimePoint t = utc(from);
      const int steps = std::string_view(rule) == "* * * * *" ? 3000 : 200;
      for (int i = 0; i < steps; ++i) {
        const auto next = next_after(c, t);
        if (!next) break;
        ASSERT_GT(*next, t) << zone << " " << rule;
        EXPECT_EQ(latest_at_or_before(c, *next), next) << zone << " " << rule;
        const auto before = latest_at_or_before(c, *next - std::chrono::nanoseconds{1});
        if (before) {
          EXPECT_LE(*before, t) << zone << " " << rule << " " << format_rfc3339(*next);
        }
        t = *next;
      }
    }
  }
}

TEST(TimeZone, NamesAreCheckedBeforeTheLookup) {
  EXPECT_EQ(*find_time_zone("").value, nullptr);
  EXPECT_EQ(*find_time_zone("UTC").value, nullptr);
  ASSERT_TRUE(find_time_zone("Europe/Berlin").ok());
  EXPECT_NE(*find_time_zone("Europe/Berlin").value, nullptr);
  const auto error = [](std::string_view name) { return find_time_zone(name).error; };
  EXPECT_EQ(error("Mars/Olympus"),
            "spec.heartbeat.timeZone \"Mars/Olympus\": unknown time zone; use an IANA name such as "
            "Europe/Berlin, America/New_York or UTC");
  for (const char* hostile : {"../../../etc/passwd", "/etc/localtime", "Europe/Berlin\n",
                              "Europe/ Berlin", "Europe/..", "zone;rm -rf /"}) {
    EXPECT_NE(error(hostile).find("is not a time zone name"), std::string::npos) << hostile;
  }
  EXPECT_NE(error(std::string(65, 'A')).find("is not a time zone name"), std::string::npos);
  EXPECT_EQ(parse_schedule({"5m", "", "", "ns/a", "Europe/Berlin"}).error,
            "spec.heartbeat.timeZone \"Europe/Berlin\": applies to a schedule; an interval is "
            "the same in every zone");
}

}  // namespace
}  // namespace hb::schedule
