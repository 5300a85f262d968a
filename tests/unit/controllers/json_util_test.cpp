// The JSON helpers the decisions build their output with.
#include "controllers/json_util.h"

#include <gtest/gtest.h>

#include <cstdint>

#include "controllers/schedule/utc_time.h"

namespace hb::controllers {
namespace {

TEST(JsonUtil, SameJsonIsEqualityThatAlsoPrintsTheSame) {
  EXPECT_TRUE(same_json(Json::parse(R"({"a":[1,"x",{"b":2.5}]})"),
                        Json{{"a", {int64_t{1}, "x", {{"b", 2.5}}}}}));
  EXPECT_TRUE(same_json(Json(uint64_t{3}), Json(int64_t{3})));  // both print 3
  EXPECT_FALSE(same_json(Json(uint64_t{3}), Json(int64_t{-3})));
  EXPECT_FALSE(same_json(Json(1), Json(1.0)));  // == says equal; "1" vs "1.0"
  EXPECT_FALSE(same_json(Json(0.0), Json(-0.0)));
  EXPECT_FALSE(same_json(Json{{"a", 1}}, Json{{"a", 1}, {"b", 1}}));
}

TEST(JsonUtil, StringViewAtPointsIntoTheObject) {
  const Json j = {{"metadata", {{"name", "bot"}, {"n", 1}}}};
  EXPECT_EQ(string_view_at(j, "metadata/name"), "bot");
  EXPECT_EQ(string_view_at(j, "metadata/n", "fallback"), "fallback");
  EXPECT_EQ(string_view_at(j, "metadata/missing"), "");
}

TEST(JsonUtil, FormatRfc3339WithoutAllocating) {
  char buf[schedule::kRfc3339Size];
  const TimePoint t = *parse_rfc3339("2024-02-29T07:08:09.999Z");
  EXPECT_EQ(std::string_view(buf, schedule::format_rfc3339(t, buf)), "2024-02-29T07:08:09Z");
  EXPECT_EQ(schedule::format_rfc3339(TimePoint{}), "1970-01-01T00:00:00Z");
  EXPECT_EQ(schedule::format_rfc3339(*parse_rfc3339("2262-04-11T23:47:16Z")),
            "2262-04-11T23:47:16Z");  // the clock's last second
  EXPECT_EQ(schedule::format_rfc3339(*parse_rfc3339("1677-09-21T00:12:44Z")),
            "1677-09-21T00:12:44Z");
}

}  // namespace
}  // namespace hb::controllers
