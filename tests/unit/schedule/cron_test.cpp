#include "controllers/schedule/cron.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>

#include "controllers/schedule/stable_hash.h"
#include "tests/unit/schedule/cron_firings.h"
#include "tests/unit/schedule/test_time.h"

namespace hb::schedule {
namespace {

using testing::utc;

CronSchedule cron(std::string_view text) {
  auto r = parse_cron(text);
  EXPECT_TRUE(r.ok()) << r.error;
  return r.value.value_or(CronSchedule{});
}

std::string error_of(std::string_view text) {
  const auto r = parse_cron(text);
  EXPECT_FALSE(r.ok()) << text;
  return r.error;
}

// The next `n` firings after `from`, as RFC 3339 strings.
std::vector<std::string> firings(std::string_view text, const std::string& from, int n) {
  return testing::firings(cron(text), from, n);
}

std::string next(std::string_view text, const std::string& from) {
  const auto n = next_after(cron(text), utc(from));
  return n ? format_rfc3339(*n) : "none";
}

using Strings = std::vector<std::string>;

TEST(CronParse, StarsNumbersRangesListsSteps) {
  const CronSchedule c = cron("*/15 9-17 1,15 * 1-5");
  EXPECT_EQ(c.minutes.count(), 4u);
  EXPECT_TRUE(c.minutes.test(0) && c.minutes.test(15) && c.minutes.test(30) && c.minutes.test(45));
  EXPECT_EQ(c.hours.count(), 9u);
  EXPECT_TRUE(c.hours.test(9) && c.hours.test(17) && !c.hours.test(18));
  EXPECT_EQ(c.days_of_month.count(), 2u);
  EXPECT_EQ(c.months.count(), 12u);
  EXPECT_EQ(c.days_of_week.count(), 5u);
  EXPECT_FALSE(c.days_of_week.test(0));
  EXPECT_TRUE(c.dow_star == false && c.dom_star == false);
}

TEST(CronParse, StepRanges) {
  const CronSchedule c = cron("10-30/10 0-23/6 */10 1-12/3 *");
  EXPECT_EQ(c.minutes.count(), 3u);  // 10, 20, 30
  EXPECT_TRUE(c.minutes.test(10) && c.minutes.test(20) && c.minutes.test(30));
  EXPECT_EQ(c.hours.count(), 4u);  // 0, 6, 12, 18
  EXPECT_TRUE(c.hours.test(18));
  EXPECT_EQ(c.days_of_month.count(), 4u);  // 1, 11, 21, 31
  EXPECT_TRUE(c.days_of_month.test(31));
  EXPECT_EQ(c.months.count(), 4u);  // 1, 4, 7, 10
  EXPECT_TRUE(c.months.test(10));
  EXPECT_TRUE(c.dom_star);
}

TEST(CronParse, SingleValueWithStepRunsToTheFieldMaximum) {
  const CronSchedule c = cron("50/5 * * * *");
  EXPECT_EQ(c.minutes.count(), 2u);  // 50, 55
  EXPECT_TRUE(c.minutes.test(55));
}

TEST(CronParse, NamesAnyCase) {
  const CronSchedule c = cron("0 0 * jan,Mar-MAY mon-FRI");
  EXPECT_EQ(c.months.count(), 4u);
  EXPECT_TRUE(c.months.test(1) && c.months.test(3) && c.months.test(5));
  EXPECT_EQ(c.days_of_week.count(), 5u);
  EXPECT_TRUE(c.days_of_week.test(1) && c.days_of_week.test(5));
}

TEST(CronParse, SundayIsZeroOrSeven) {
  EXPECT_EQ(cron("0 0 * * 0").days_of_week, cron("0 0 * * 7").days_of_week);
  EXPECT_EQ(cron("0 0 * * SUN").days_of_week, cron("0 0 * * 7").days_of_week);
  const CronSchedule weekend = cron("0 0 * * 6-7");
  EXPECT_EQ(weekend.days_of_week.count(), 2u);
  EXPECT_TRUE(weekend.days_of_week.test(0) && weekend.days_of_week.test(6));
  EXPECT_EQ(cron("0 0 * * 0-7").days_of_week.count(), 7u);
}

TEST(CronParse, MacrosEqualTheirExpansion) {
  const auto same = [](std::string_view macro, std::string_view fields) {
    const CronSchedule a = cron(macro);
    const CronSchedule b = cron(fields);
    EXPECT_EQ(a.minutes, b.minutes) << macro;
    EXPECT_EQ(a.hours, b.hours) << macro;
    EXPECT_EQ(a.days_of_month, b.days_of_month) << macro;
    EXPECT_EQ(a.months, b.months) << macro;
    EXPECT_EQ(a.days_of_week, b.days_of_week) << macro;
    EXPECT_EQ(a.dom_star, b.dom_star) << macro;
    EXPECT_EQ(a.dow_star, b.dow_star) << macro;
    EXPECT_EQ(a.text, macro);
  };
  same("@yearly", "0 0 1 1 *");
  same("@annually", "0 0 1 1 *");
  same("@monthly", "0 0 1 * *");
  same("@weekly", "0 0 * * 0");
  same("@daily", "0 0 * * *");
  same("@midnight", "0 0 * * *");
  same("@hourly", "0 * * * *");
  same("@DAILY", "0 0 * * *");
}

TEST(CronParse, ToleratesSurroundingAndRepeatedWhitespace) {
  EXPECT_EQ(cron("  0\t12  *  * *  ").hours, cron("0 12 * * *").hours);
}

TEST(CronParse, OutOfRangeErrorNamesFieldAndValue) {
  EXPECT_EQ(error_of("61 * * * *"), "schedule \"61 * * * *\": minute 61 out of range 0-59");
  EXPECT_EQ(parse_cron("0 24 * * *", "spec.heartbeat.schedule").error,
            "spec.heartbeat.schedule \"0 24 * * *\": hour 24 out of range 0-23");
  EXPECT_NE(error_of("0 0 0 * *").find("day-of-month 0 out of range 1-31"), std::string::npos);
  EXPECT_NE(error_of("0 0 32 * *").find("day-of-month 32 out of range 1-31"), std::string::npos);
  EXPECT_NE(error_of("0 0 * 13 *").find("month 13 out of range 1-12"), std::string::npos);
  EXPECT_NE(error_of("0 0 * * 8").find("day-of-week 8 out of range 0-7"), std::string::npos);
  EXPECT_NE(error_of("1-99999 * * * *").find("minute 99999 out of range"), std::string::npos);
}

TEST(CronParse, RejectsMalformedFields) {
  EXPECT_NE(error_of("30-10 * * * *").find("minute range 30-10 is backwards"), std::string::npos);
  EXPECT_NE(error_of("*/0 * * * *").find("minute step 0 out of range 1-60"), std::string::npos);
  EXPECT_NE(error_of("*/61 * * * *").find("minute step 61 out of range"), std::string::npos);
  EXPECT_NE(error_of("*/x * * * *").find("minute step \"x\" is not a number"), std::string::npos);
  EXPECT_NE(error_of("1,,2 * * * *").find("minute has an empty list element"), std::string::npos);
  EXPECT_NE(
      error_of("0 0 * * FUN").find("day-of-week \"FUN\" is not a number or day name (SUN-SAT)"),
      std::string::npos);
  EXPECT_NE(error_of("0 0 * JANUARY *").find("month \"JANUARY\" is not a number or month name"),
            std::string::npos);
  EXPECT_NE(error_of("MON 0 * * *").find("minute \"MON\" is not a number"), std::string::npos);
  EXPECT_NE(error_of("-5 * * * *").find("minute \"\" is not a number"), std::string::npos);
}

TEST(CronParse, RejectsWrongShapes) {
  EXPECT_NE(error_of("").find("is empty"), std::string::npos);
  EXPECT_NE(error_of("* * * *").find("expected 5 fields"), std::string::npos);
  EXPECT_NE(error_of("0 * * * * *").find("a seconds field is not supported"), std::string::npos);
  EXPECT_NE(error_of("@every 5m").find("use spec.heartbeat.interval"), std::string::npos);
  EXPECT_NE(error_of("@reboot").find("unknown macro \"@reboot\""), std::string::npos);
  EXPECT_NE(error_of("@daily 1").find("unknown macro"), std::string::npos);
  EXPECT_NE(error_of("TZ=Europe/Berlin 0 9 * * *").find("set spec.heartbeat.timeZone"),
            std::string::npos);
  EXPECT_NE(error_of("CRON_TZ=UTC 0 9 * * *").find("set spec.heartbeat.timeZone"),
            std::string::npos);
}

TEST(CronNext, IsStrictlyAfterEvenOnAMatchingMinute) {
  EXPECT_EQ(next("* * * * *", "2024-05-01T10:00:00Z"), "2024-05-01T10:01:00Z");
  EXPECT_EQ(next("* * * * *", "2024-05-01T10:00:59.999Z"), "2024-05-01T10:01:00Z");
  EXPECT_EQ(next("0 * * * *", "2024-05-01T10:00:00Z"), "2024-05-01T11:00:00Z");
  EXPECT_EQ(next("0 * * * *", "2024-05-01T09:59:59Z"), "2024-05-01T10:00:00Z");
}

TEST(CronNext, StepsAndRanges) {
  EXPECT_EQ(firings("*/20 9-10 * * *", "2024-05-01T08:00:00Z", 7),
            (Strings{"2024-05-01T09:00:00Z", "2024-05-01T09:20:00Z", "2024-05-01T09:40:00Z",
                     "2024-05-01T10:00:00Z", "2024-05-01T10:20:00Z", "2024-05-01T10:40:00Z",
                     "2024-05-02T09:00:00Z"}));
}

TEST(CronNext, RollsOverDayMonthAndYear) {
  EXPECT_EQ(next("30 0 * * *", "2024-01-31T23:59:00Z"), "2024-02-01T00:30:00Z");
  EXPECT_EQ(next("* * * * *", "2024-12-31T23:59:00Z"), "2025-01-01T00:00:00Z");
  EXPECT_EQ(next("0 0 31 * *", "2024-04-01T00:00:00Z"), "2024-05-31T00:00:00Z");
}

TEST(CronNext, Yearly) {
  EXPECT_EQ(firings("@yearly", "2024-01-01T00:00:00Z", 2),
            (Strings{"2025-01-01T00:00:00Z", "2026-01-01T00:00:00Z"}));
  EXPECT_EQ(next("@yearly", "2023-12-31T23:59:59Z"), "2024-01-01T00:00:00Z");
}

TEST(CronNext, Feb29OnlyInLeapYears) {
  EXPECT_EQ(firings("0 12 29 2 *", "2023-01-01T00:00:00Z", 3),
            (Strings{"2024-02-29T12:00:00Z", "2028-02-29T12:00:00Z", "2032-02-29T12:00:00Z"}));
  // 2100 is not a leap year: eight years between leap days, still found.
  EXPECT_EQ(next("0 12 29 2 *", "2096-03-01T00:00:00Z"), "2104-02-29T12:00:00Z");
  EXPECT_EQ(next("0 0 * 2 *", "2024-02-28T23:59:00Z"), "2024-02-29T00:00:00Z");
  EXPECT_EQ(next("0 0 * 2 *", "2023-02-28T23:59:00Z"), "2024-02-01T00:00:00Z");
}

TEST(CronNext, DayOfMonthOrDayOfWeekWhenBothRestricted) {
  // Vixie rule: the 13th of every month OR every Friday. 2024-09-13 is a Friday.
  EXPECT_EQ(firings("0 0 13 * FRI", "2024-09-01T00:00:00Z", 5),
            (Strings{"2024-09-06T00:00:00Z", "2024-09-13T00:00:00Z", "2024-09-20T00:00:00Z",
                     "2024-09-27T00:00:00Z", "2024-10-04T00:00:00Z"}));
  EXPECT_EQ(firings("0 0 1 * MON", "2024-06-30T00:00:00Z", 3),
            (Strings{"2024-07-01T00:00:00Z", "2024-07-08T00:00:00Z", "2024-07-15T00:00:00Z"}));
}

TEST(CronNext, DayOfMonthAndDayOfWeekWhenEitherStartsWithStar) {
  EXPECT_EQ(firings("0 0 * * FRI", "2024-09-01T00:00:00Z", 2),
            (Strings{"2024-09-06T00:00:00Z", "2024-09-13T00:00:00Z"}));
  // "*/2" starts with '*', so both must match: odd days that are Mondays.
  EXPECT_EQ(firings("0 0 */2 * MON", "2024-07-01T00:00:00Z", 3),
            (Strings{"2024-07-15T00:00:00Z", "2024-07-29T00:00:00Z", "2024-08-05T00:00:00Z"}));
  // A restricted day of month with '*' day of week: only that day.
  EXPECT_EQ(firings("0 0 13 * *", "2024-09-01T00:00:00Z", 2),
            (Strings{"2024-09-13T00:00:00Z", "2024-10-13T00:00:00Z"}));
}

TEST(CronNext, SundayAsZeroAndSevenFireTheSameDays) {
  // 2024-06-02 is a Sunday.
  EXPECT_EQ(next("0 9 * * 0", "2024-06-01T00:00:00Z"), "2024-06-02T09:00:00Z");
  EXPECT_EQ(next("0 9 * * 7", "2024-06-01T00:00:00Z"), "2024-06-02T09:00:00Z");
  EXPECT_EQ(next("0 9 * * SUN", "2024-06-01T00:00:00Z"), "2024-06-02T09:00:00Z");
  EXPECT_EQ(next("0 9 * * 5-7", "2024-06-01T10:00:00Z"), "2024-06-02T09:00:00Z");
}

TEST(CronNext, ImpossibleDatesGiveNoneWithoutSpinning) {
  EXPECT_EQ(next("0 0 30 2 *", "2024-01-01T00:00:00Z"), "none");
  EXPECT_EQ(next("0 0 31 4,6,9,11 *", "2024-01-01T00:00:00Z"), "none");
  EXPECT_FALSE(can_ever_match(cron("0 0 30 2 *")));
  EXPECT_FALSE(can_ever_match(cron("0 0 31 4,6,9,11 *")));
  EXPECT_FALSE(latest_at_or_before(cron("0 0 30 2 *"), utc("2024-06-01T00:00:00Z")));
}

TEST(CronNext, PossibleRulesCanMatch) {
  EXPECT_TRUE(can_ever_match(cron("0 0 29 2 *")));
  EXPECT_TRUE(can_ever_match(cron("0 0 31 * *")));
  EXPECT_TRUE(can_ever_match(cron("0 0 30 2 MON")));  // OR rule: every Monday in February
  EXPECT_TRUE(can_ever_match(cron("* * * * *")));
  EXPECT_EQ(next("0 0 30 2 MON", "2024-01-01T00:00:00Z"), "2024-02-05T00:00:00Z");
}

TEST(CronLatest, IsAtOrBefore) {
  const CronSchedule hourly = cron("0 * * * *");
  EXPECT_EQ(format_rfc3339(*latest_at_or_before(hourly, utc("2024-05-01T10:00:00Z"))),
            "2024-05-01T10:00:00Z");
  EXPECT_EQ(format_rfc3339(*latest_at_or_before(hourly, utc("2024-05-01T10:59:59Z"))),
            "2024-05-01T10:00:00Z");
  EXPECT_EQ(format_rfc3339(*latest_at_or_before(cron("@yearly"), utc("2024-12-31T23:59:00Z"))),
            "2024-01-01T00:00:00Z");
  EXPECT_EQ(format_rfc3339(*latest_at_or_before(cron("30 23 * * *"), utc("2025-01-01T00:10:00Z"))),
            "2024-12-31T23:30:00Z");
  EXPECT_EQ(format_rfc3339(*latest_at_or_before(cron("0 12 29 2 *"), utc("2104-01-01T00:00:00Z"))),
            "2096-02-29T12:00:00Z");
}

TEST(CronMatches, ChecksTheWholeMinute) {
  const CronSchedule c = cron("15 10 * * *");
  EXPECT_TRUE(cron_matches(c, utc("2024-05-01T10:15:00Z")));
  EXPECT_TRUE(cron_matches(c, utc("2024-05-01T10:15:59Z")));
  EXPECT_FALSE(cron_matches(c, utc("2024-05-01T10:16:00Z")));
}

// ---- H: a stable hash of the agent spreads a fleet ----

CronSchedule hashed(std::string_view text, std::string_view key) {
  auto r = parse_cron(text, "schedule", key);
  EXPECT_TRUE(r.ok()) << r.error;
  return r.value.value_or(CronSchedule{});
}

template <std::size_t N>
std::vector<int> values(const std::bitset<N>& bits) {
  std::vector<int> out;
  for (std::size_t v = 0; v < N; ++v) {
    if (bits.test(v)) out.push_back(static_cast<int>(v));
  }
  return out;
}

TEST(CronHashed, PinnedValuesNeverChange) {
  // An agent keeps its minute across builds and operator versions: these are
  // the values every future version must give (a change moves every fleet).
  const CronSchedule c = hashed("H H H * H", "agents/scribe");
  EXPECT_EQ(values(c.minutes), std::vector<int>({6}));
  EXPECT_EQ(values(c.hours), std::vector<int>({20}));
  EXPECT_EQ(values(c.days_of_month), std::vector<int>({7}));
  EXPECT_EQ(values(c.days_of_week), std::vector<int>({0}));
  EXPECT_EQ(stable_hash("", 0), 14087677454934409008u);
}

TEST(CronHashed, SameAgentSameValuesOtherAgentsSpread) {
  EXPECT_EQ(hashed("H * * * *", "a/b").minutes, hashed("H * * * *", "a/b").minutes);
  // 1,000 agents on "H * * * *": every minute of the hour is used and none
  // carries a herd (a fair share is 16.7).
  std::array<int, 60> per_minute{};
  for (int i = 0; i < 1000; ++i) {
    const auto mins = values(hashed("H * * * *", "team/agent-" + std::to_string(i)).minutes);
    ASSERT_EQ(mins.size(), 1u);
    ++per_minute[static_cast<std::size_t>(mins[0])];
  }
  EXPECT_EQ(std::count(per_minute.begin(), per_minute.end(), 0), 0);
  EXPECT_LE(*std::max_element(per_minute.begin(), per_minute.end()), 35);
}

TEST(CronHashed, FieldsOfOneAgentAreIndependent) {
  // With one hash for all fields, "H H * * *" would pick minute == hour % 24
  // style coincidences for every agent; per-field salts make them unrelated.
  int same = 0;
  for (int i = 0; i < 200; ++i) {
    const CronSchedule c = hashed("H H * * *", "ns/a" + std::to_string(i));
    if (values(c.minutes)[0] % 24 == values(c.hours)[0]) ++same;
  }
  EXPECT_LT(same, 40);  // about 200/24 = 8 by chance
}

TEST(CronHashed, StepsAndRanges) {
  const CronSchedule every15 = hashed("H/15 * * * *", "x/y");
  const auto m = values(every15.minutes);
  ASSERT_EQ(m.size(), 4u);
  EXPECT_LT(m[0], 15);
  EXPECT_EQ(m[1] - m[0], 15);
  EXPECT_EQ(m[3] - m[0], 45);

  for (int i = 0; i < 100; ++i) {
    const std::string key = "ns/r" + std::to_string(i);
    const CronSchedule morning = hashed("H(0-29) 9 * * 1-5", key);
    const auto mm = values(morning.minutes);
    ASSERT_EQ(mm.size(), 1u);
    EXPECT_LE(mm[0], 29);
    EXPECT_EQ(values(morning.hours), std::vector<int>({9}));
    const auto stepped = values(hashed("H(0-29)/10 * * * *", key).minutes);
    ASSERT_EQ(stepped.size(), 3u);
    EXPECT_LT(stepped[0], 10);
    EXPECT_LE(stepped[2], 29);
    // A hashed day of month exists in every month; a hashed weekday is 0-6.
    const CronSchedule days = hashed("0 0 H * H", key);
    EXPECT_LE(values(days.days_of_month)[0], 28);
    EXPECT_LE(values(days.days_of_week)[0], 6);
    EXPECT_FALSE(days.dom_star);  // H restricts the day like a number does
    const auto weekday = values(hashed("0 0 * * H(MON-FRI)", key).days_of_week);
    ASSERT_EQ(weekday.size(), 1u);
    EXPECT_GE(weekday[0], 1);
    EXPECT_LE(weekday[0], 5);
  }
  // A list may mix H with numbers.
  EXPECT_EQ(values(hashed("H(0-0),30 * * * *", "k/k").minutes), std::vector<int>({0, 30}));
}

TEST(CronHashed, BadHashedFieldsNameTheFieldAndTheFix) {
  const auto err = [](std::string_view text) {
    const auto r = parse_cron(text, "spec.heartbeat.schedule", "ns/a");
    EXPECT_FALSE(r.ok()) << text;
    return r.error;
  };
  EXPECT_EQ(err("H(5) * * * *"),
            "spec.heartbeat.schedule \"H(5) * * * *\": minute \"H(5)\": H takes an optional range "
            "in parentheses, e.g. H(0-29) or H(0-29)/10");
  EXPECT_THAT(err("H5 * * * *"), ::testing::HasSubstr("H takes an optional range"));
  EXPECT_THAT(err("H(0-29 * * * *"), ::testing::HasSubstr("H takes an optional range"));
  EXPECT_EQ(err("H(30-10) * * * *"),
            "spec.heartbeat.schedule \"H(30-10) * * * *\": minute range 30-10 is backwards; "
            "write the smaller value first");
  EXPECT_EQ(err("0 H(0-24) * * *"),
            "spec.heartbeat.schedule \"0 H(0-24) * * *\": hour 24 out of range 0-23");
  EXPECT_EQ(err("H/0 * * * *"),
            "spec.heartbeat.schedule \"H/0 * * * *\": minute step 0 out of range 1-60");
  EXPECT_EQ(err("H(0-9)/11 * * * *"),
            "spec.heartbeat.schedule \"H(0-9)/11 * * * *\": minute step 11 out of range 1-10");
  EXPECT_THAT(err("H/x * * * *"), ::testing::HasSubstr("minute step \"x\" is not a number"));
  EXPECT_THAT(err("h * * * *"), ::testing::HasSubstr("minute \"h\" is not a number"));
}

}  // namespace
}  // namespace hb::schedule
