// The JSON helpers the decisions build their output with.
#include "controllers/model/json_util.h"

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

// The key is one name, slash and all; anything but a string reads as absent.
TEST(JsonUtil, AnnotationAtReadsOnlyAStringUnderItsWholeKey) {
  const Json object = Json::parse(R"({"metadata": {"annotations": {
      "heartbeat.dev/run": "bot-1", "heartbeat.dev/n": 7, "heartbeat.dev/o": {"a": "b"}}}})");
  EXPECT_EQ(annotation_at(object, "heartbeat.dev/run"), "bot-1");
  EXPECT_EQ(annotation_at(object, "heartbeat.dev/n"), "");
  EXPECT_EQ(annotation_at(object, "heartbeat.dev/o"), "");
  EXPECT_EQ(annotation_at(object, "heartbeat.dev"), "");
  EXPECT_EQ(annotation_at(object, "heartbeat.dev/absent"), "");
  for (const char* metadata : {R"({"annotations": ["heartbeat.dev/run"]})",
                               R"({"annotations": "heartbeat.dev/run=bot-1"})", R"({})", "7"}) {
    const Json odd = {{"metadata", Json::parse(metadata)}};
    EXPECT_EQ(annotation_at(odd, "heartbeat.dev/run"), "") << metadata;
  }
  EXPECT_EQ(annotation_at(Json::array(), "heartbeat.dev/run"), "");
}

TEST(JsonUtil, FormatRfc3339WithoutAllocating) {
  char buf[schedule::kRfc3339Size];
  const TimePoint t = *parse_rfc3339("2024-02-29T07:08:09.999Z");
  EXPECT_EQ(std::string_view(buf, schedule::format_rfc3339(t, buf)), "2024-02-29T07:08:09Z");
  EXPECT_EQ(schedule::format_rfc3339(TimePoint{}), "1970-01-01T00:00:00Z");
  EXPECT_EQ(schedule::format_rfc3339(TimePoint(std::chrono::seconds(9223372036))),
            "2262-04-11T23:47:16Z");  // the clock's last second
  EXPECT_EQ(schedule::format_rfc3339(TimePoint(std::chrono::seconds(-9223372036))),
            "1677-09-21T00:12:44Z");
}

// Times outside 1970..2200 are refused: a Lease renewTime in 2262 must not
// hold off the stall watchdog, nor any time sum near the clock's end overflow.
TEST(JsonUtil, Rfc3339YearsOutside1970To2200AreRefused) {
  EXPECT_TRUE(parse_rfc3339("1970-01-01T00:00:00Z"));
  EXPECT_TRUE(parse_rfc3339("2200-12-31T23:59:59Z"));
  EXPECT_FALSE(parse_rfc3339("2262-04-11T23:47:16Z"));
  EXPECT_FALSE(parse_rfc3339("9999-12-31T23:59:59Z"));
  EXPECT_FALSE(parse_rfc3339("1969-12-31T23:59:59Z"));
}

// A number too large for an int64 saturates instead of wrapping or being UB.
TEST(JsonUtil, IntAtSaturates) {
  const Json doc = Json::parse(R"({"big":1e300,"neg":-1e300,"u":18446744073709551615,"ok":7})");
  EXPECT_EQ(int_at(doc, "big"), INT64_MAX);
  EXPECT_EQ(int_at(doc, "neg"), INT64_MIN);
  EXPECT_EQ(int_at(doc, "u"), INT64_MAX);
  EXPECT_EQ(int_at(doc, "ok"), 7);
}

}  // namespace
}  // namespace hb::controllers
