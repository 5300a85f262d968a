// Daily spend periods: a day in a time zone, its key, when it ends, how
// long it is kept.
#include "controllers/schedule/spend_day.h"

#include <date/tz.h>
#include <gtest/gtest.h>

#include "controllers/schedule/time_zone.h"
#include "tests/unit/schedule/test_time.h"

namespace hb::schedule {
namespace {

using testing::utc;

const date::time_zone* zone(const char* name) {
  auto found = find_time_zone(name);
  EXPECT_TRUE(found.ok()) << found.error;
  return found.ok() ? *found.value : nullptr;
}

// The key a status's day and zone make is the key the ledger counts under.
TEST(SpendDay, DayKeyIsTheKeySpendDayMakesAndReadsBack) {
  const TimePoint t = utc("2026-12-06T23:30:00Z");
  EXPECT_EQ(day_key("2026-12-07", "Europe/Berlin"), spend_day(t, zone("Europe/Berlin")));
  EXPECT_EQ(day_key("2026-12-06", kUtcZoneName), spend_day(t, nullptr));
  const std::string key = day_key("2026-12-06", "America/New_York");
  EXPECT_EQ(day_of_key(key), "2026-12-06");
  EXPECT_EQ(zone_of_key(key), "America/New_York");
}

TEST(SpendDay, TheDayIsTheZonesCalendarDayAndItsKeyNamesTheZone) {
  const TimePoint t = utc("2026-12-06T23:30:00Z");
  EXPECT_EQ(spend_day(t, nullptr), "2026-12-06@UTC");
  EXPECT_EQ(spend_day(t, zone("Europe/Berlin")), "2026-12-07@Europe/Berlin");
  EXPECT_EQ(spend_day(t, zone("America/New_York")), "2026-12-06@America/New_York");
  EXPECT_EQ(spend_day(utc("2026-12-06T03:00:00Z"), zone("America/New_York")),
            "2026-12-05@America/New_York");
  EXPECT_EQ(day_of_key("2026-12-07@Europe/Berlin"), "2026-12-07");
  EXPECT_EQ(zone_of_key("2026-12-07@Europe/Berlin"), "Europe/Berlin");
  EXPECT_TRUE(day_of_key("2026-12").empty()) << "a month is not a day";
  EXPECT_TRUE(day_of_key("2026-12-07@").empty());
}

TEST(SpendDay, TheNextDayStartsAtLocalMidnightAcrossDaylightSaving) {
  EXPECT_EQ(format_rfc3339(start_of_next_day(utc("2026-12-06T23:59:59Z"), nullptr)),
            "2026-12-07T00:00:00Z");
  EXPECT_EQ(format_rfc3339(start_of_next_day(utc("2026-12-06T12:00:00Z"), zone("Europe/Berlin"))),
            "2026-12-06T23:00:00Z");
  // Berlin's clocks go forward on 2026-03-29: that day has 23 hours.
  EXPECT_EQ(format_rfc3339(start_of_next_day(utc("2026-03-29T12:00:00Z"), zone("Europe/Berlin"))),
            "2026-03-29T22:00:00Z");
  // Havana skips midnight (00:00 -> 01:00 on 2026-03-08): the day starts at the jump.
  const TimePoint before = utc("2026-03-07T12:00:00Z");
  const TimePoint next = start_of_next_day(before, zone("America/Havana"));
  EXPECT_GT(next, before);
  EXPECT_EQ(spend_day(next, zone("America/Havana")), "2026-03-08@America/Havana");
  EXPECT_EQ(spend_day(next - std::chrono::seconds(1), zone("America/Havana")),
            "2026-03-07@America/Havana");
}

TEST(SpendDay, DaysAreKeptThreeDaysThenExpire) {
  const TimePoint now = utc("2026-12-06T10:00:00Z");
  EXPECT_FALSE(day_expired("2026-12-06@UTC", now));
  EXPECT_FALSE(day_expired("2026-12-03@Pacific/Kiritimati", now));
  EXPECT_TRUE(day_expired("2026-12-02@UTC", now));
  EXPECT_FALSE(day_expired("2026-12", now)) << "months are not days";
}

}  // namespace
}  // namespace hb::schedule
