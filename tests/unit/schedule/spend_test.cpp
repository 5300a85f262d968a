#include "controllers/schedule/spend.h"

#include <gtest/gtest.h>

#include "tests/unit/schedule/test_time.h"

namespace hb::schedule {
namespace {

using testing::utc;

TEST(Spend, PeriodIsTheUtcMonth) {
  EXPECT_EQ(spend_period(utc("2024-01-31T23:59:59Z")), "2024-01");
  EXPECT_EQ(spend_period(utc("2024-02-01T00:00:00Z")), "2024-02");
  EXPECT_EQ(spend_period(utc("2024-12-31T23:59:59Z")), "2024-12");
  EXPECT_EQ(spend_period(utc("2025-01-01T00:00:00Z")), "2025-01");
}

TEST(Spend, NextPeriodStartsOnTheFirstAtMidnight) {
  EXPECT_EQ(format_rfc3339(start_of_next_period(utc("2024-01-31T23:59:00Z"))),
            "2024-02-01T00:00:00Z");
  EXPECT_EQ(format_rfc3339(start_of_next_period(utc("2024-02-29T12:00:00Z"))),
            "2024-03-01T00:00:00Z");
  EXPECT_EQ(format_rfc3339(start_of_next_period(utc("2024-12-31T23:59:59Z"))),
            "2025-01-01T00:00:00Z");
  EXPECT_EQ(format_rfc3339(start_of_next_period(utc("2024-03-01T00:00:00Z"))),
            "2024-04-01T00:00:00Z");
}

TEST(Spend, OlderPeriodCountsAsZero) {
  EXPECT_EQ(spend_in_current_period("2024-01", 700, utc("2024-01-31T23:59:00Z")), 700);
  EXPECT_EQ(spend_in_current_period("2024-01", 700, utc("2024-02-01T00:00:00Z")), 0);
  EXPECT_EQ(spend_in_current_period("2024-12", 700, utc("2025-01-01T00:00:00Z")), 0);
  EXPECT_EQ(spend_in_current_period("", 700, utc("2025-01-01T00:00:00Z")), 0);
}

TEST(UtcTime, FormatsRfc3339AndUnixSeconds) {
  EXPECT_EQ(format_rfc3339(utc("2024-02-29T12:34:56.789Z")), "2024-02-29T12:34:56Z");
  EXPECT_EQ(unix_seconds(utc("2024-02-29T12:00:00.999Z")), 1709208000);
}

}  // namespace
}  // namespace hb::schedule
