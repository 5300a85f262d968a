#include "controllers/schedule/duration.h"

#include <gtest/gtest.h>

namespace hb::schedule {
namespace {

constexpr std::string_view kField = "spec.heartbeat.interval";

int64_t seconds_of(std::string_view text) {
  const auto r = parse_duration_seconds(text, kField);
  EXPECT_TRUE(r.ok()) << r.error;
  return r.value.value_or(-1);
}

std::string error_of(std::string_view text) {
  const auto r = parse_duration_seconds(text, kField);
  EXPECT_FALSE(r.ok()) << text << " parsed as " << r.value.value_or(-1);
  return r.error;
}

TEST(Duration, ParsesHoursMinutesSeconds) {
  EXPECT_EQ(seconds_of("30s"), 30);
  EXPECT_EQ(seconds_of("5m"), 300);
  EXPECT_EQ(seconds_of("1h"), 3600);
  EXPECT_EQ(seconds_of("2h30m"), 9000);
  EXPECT_EQ(seconds_of("1h0m30s"), 3630);
  EXPECT_EQ(seconds_of("90m"), 5400);
  EXPECT_EQ(seconds_of("1m30s"), 90);
  EXPECT_EQ(seconds_of("0"), 0);
  EXPECT_EQ(seconds_of("87600h"), kDurationSecondsMax);
}

TEST(Duration, UnknownUnitNamesFieldValueAndUnit) {
  EXPECT_EQ(
      parse_duration_seconds("5x", "heartbeat.interval").error,
      "heartbeat.interval \"5x\": unknown unit 'x'; use a duration like 30s, 5m, 1h or 2h30m");
}

TEST(Duration, RejectsMalformedInput) {
  EXPECT_NE(error_of("").find("is empty"), std::string::npos);
  EXPECT_NE(error_of("5").find("missing unit after 5"), std::string::npos);
  EXPECT_NE(error_of("-5m").find("sign"), std::string::npos);
  EXPECT_NE(error_of("+5m").find("sign"), std::string::npos);
  EXPECT_NE(error_of("1.5h").find("fractions"), std::string::npos);
  EXPECT_NE(error_of("30s1h").find("order h, m, s"), std::string::npos);
  EXPECT_NE(error_of("1h1h").find("order h, m, s"), std::string::npos);
  EXPECT_NE(error_of("500ms").find("unit 'ms' is not supported"), std::string::npos);
  EXPECT_NE(error_of("5 m").find("unexpected character ' '"), std::string::npos);
  EXPECT_NE(error_of("m").find("expected a number at 'm'"), std::string::npos);
  EXPECT_NE(error_of("1H").find("unknown unit 'H'"), std::string::npos);
  EXPECT_NE(error_of("5d").find("unknown unit 'd'"), std::string::npos);
  EXPECT_NE(error_of("87601h").find("longer than the maximum 87600h"), std::string::npos);
  EXPECT_NE(error_of("99999999999999999999999h").find("longer than"), std::string::npos);
}

TEST(Duration, ErrorsQuoteFieldAndInput) {
  EXPECT_EQ(error_of("1.5h").rfind("spec.heartbeat.interval \"1.5h\": ", 0), 0u);
}

TEST(Duration, MinimumIsASeparateCheckNamingTheField) {
  EXPECT_EQ(check_duration_min(kField, 30), std::nullopt);
  EXPECT_EQ(check_duration_min(kField, 3600), std::nullopt);
  EXPECT_EQ(check_duration_min(kField, 29),
            "spec.heartbeat.interval 29s is shorter than the minimum 30s");
  EXPECT_EQ(check_duration_min("spec.x", 0, 60), "spec.x 0s is shorter than the minimum 1m");
}

TEST(Duration, FormatsCanonically) {
  EXPECT_EQ(format_duration(0), "0s");
  EXPECT_EQ(format_duration(45), "45s");
  EXPECT_EQ(format_duration(300), "5m");
  EXPECT_EQ(format_duration(9000), "2h30m");
  EXPECT_EQ(format_duration(3630), "1h30s");
  EXPECT_EQ(format_duration(-90), "-1m30s");
}

TEST(Duration, FormatRoundTripsThroughParse) {
  for (int64_t s : {30, 59, 60, 61, 3599, 3600, 3601, 9000, 86400, 90061}) {
    EXPECT_EQ(seconds_of(format_duration(s)), s);
  }
}

}  // namespace
}  // namespace hb::schedule
