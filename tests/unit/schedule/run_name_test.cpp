#include "controllers/schedule/run_name.h"

#include <gtest/gtest.h>

#include <string>

#include "tests/unit/schedule/test_time.h"

namespace hb::schedule {
namespace {

using testing::utc;

TEST(RunName, AgentDashUnixSeconds) {
  EXPECT_EQ(scheduled_run_name("news-bot", utc("2024-02-29T12:00:00Z")), "news-bot-1709208000");
  EXPECT_EQ(scheduled_run_name("a", utc("1970-01-01T00:00:00Z")), "a-0");
}

TEST(RunName, DeterministicPerAgentAndSlot) {
  const TimePoint slot = utc("2024-02-29T12:00:00Z");
  EXPECT_EQ(scheduled_run_name("news-bot", slot), scheduled_run_name("news-bot", slot));
  // Sub-second noise in the slot does not change the name.
  EXPECT_EQ(scheduled_run_name("news-bot", utc("2024-02-29T12:00:00.750Z")),
            scheduled_run_name("news-bot", slot));
  EXPECT_NE(scheduled_run_name("news-bot", slot), scheduled_run_name("news-bot2", slot));
}

TEST(RunName, SlotsThirtySecondsApartGetDistinctNames) {
  EXPECT_NE(scheduled_run_name("x", utc("2024-02-29T12:00:00Z")),
            scheduled_run_name("x", utc("2024-02-29T12:00:30Z")));
}

TEST(RunName, LongAgentNamesAreTruncatedWithAStableHash) {
  const TimePoint slot = utc("2024-02-29T12:00:00Z");
  const std::string long_a(253, 'a');
  const std::string long_b = std::string(252, 'a') + "b";
  const std::string a = scheduled_run_name(long_a, slot);
  const std::string b = scheduled_run_name(long_b, slot);
  EXPECT_EQ(a.size(), kRunNameCharsMax);
  EXPECT_TRUE(is_dns1123_label(a)) << a;
  EXPECT_TRUE(is_dns1123_label(b)) << b;
  EXPECT_NE(a, b);  // same readable prefix, different hash
  EXPECT_EQ(a, scheduled_run_name(long_a, slot));
  EXPECT_TRUE(a.ends_with("-1709208000"));
  EXPECT_TRUE(a.starts_with("aaaa"));
}

TEST(RunName, FitsExactlyAtTheLimitWithoutHash) {
  const std::string name(kRunNameCharsMax - 11, 'x');  // 11 = "-1709208000"
  const std::string run = scheduled_run_name(name, utc("2024-02-29T12:00:00Z"));
  EXPECT_EQ(run, name + "-1709208000");
  const std::string one_more = scheduled_run_name(name + "y", utc("2024-02-29T12:00:00Z"));
  EXPECT_EQ(one_more.size(), kRunNameCharsMax);
  EXPECT_TRUE(is_dns1123_label(one_more)) << one_more;
}

TEST(RunName, DotsAndTruncationNeverLeaveAnInvalidLabel) {
  const TimePoint slot = utc("2024-02-29T12:00:00Z");
  const std::string dotted = scheduled_run_name("team.news-bot", slot);
  EXPECT_TRUE(is_dns1123_label(dotted)) << dotted;
  EXPECT_NE(dotted, scheduled_run_name("team-news-bot", slot));
  // Truncation landing on a '-' or '.' is trimmed back to an alphanumeric.
  for (std::size_t cut = 30; cut < 50; ++cut) {
    std::string name(cut, 'a');
    name += "-.-.-.-.-.-.-.-.-.-.-.-.-.-.-.-.-.-.-.-.-.-.-.-.-b";
    const std::string run = scheduled_run_name(name, slot);
    EXPECT_TRUE(is_dns1123_label(run)) << run;
  }
}

TEST(RunName, LabelCheck) {
  EXPECT_TRUE(is_dns1123_label("a"));
  EXPECT_TRUE(is_dns1123_label("a-1"));
  EXPECT_FALSE(is_dns1123_label(""));
  EXPECT_FALSE(is_dns1123_label("-a"));
  EXPECT_FALSE(is_dns1123_label("a-"));
  EXPECT_FALSE(is_dns1123_label("A"));
  EXPECT_FALSE(is_dns1123_label("a.b"));
  EXPECT_FALSE(is_dns1123_label(std::string(64, 'a')));
}

}  // namespace
}  // namespace hb::schedule
