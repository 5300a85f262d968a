// The one RFC 3339 parser both sides use, and the two formats they write.
#include "api/rfc3339.h"

#include <gtest/gtest.h>

namespace hb::api {
namespace {

using namespace std::chrono_literals;

TEST(Rfc3339Contract, KubernetesAndDocumentTimesParse) {
  const TimePoint t = *parse_rfc3339("2024-05-01T12:00:00Z");
  EXPECT_EQ(parse_rfc3339("2024-05-01t12:00:00z"), t);
  EXPECT_EQ(parse_rfc3339("2024-05-01T14:00:00+02:00"), t);
  EXPECT_EQ(parse_rfc3339("2024-05-01T11:30:00-00:30"), t);
  EXPECT_EQ(parse_rfc3339("2024-05-01T12:00:00.250000Z"), t + 250ms);
  EXPECT_EQ(parse_rfc3339("2024-05-01T12:00:00.1234567891234Z"), t + 123456789ns);
}

TEST(Rfc3339Contract, MalformedTimesDoNot) {
  for (const char* bad :
       {"", "2024-05-01", "2024-05-01 12:00:00Z", "2024-05-01T12:00:00", "2024-05-01T12:00:00.Z",
        "2024-05-01T12:00:00+0200", "2024-05-01T12:00:00Zjunk", "2024-13-01T12:00:00Z",
        "2024-02-30T12:00:00Z", "2024-05-01T24:00:00Z", "1969-12-31T23:59:59Z",
        "2201-01-01T00:00:00Z", "+2024-05-01T12:00:00Z"}) {
    EXPECT_FALSE(parse_rfc3339(bad)) << bad;
  }
}

TEST(Rfc3339Contract, FormatsParseBack) {
  const TimePoint t = *parse_rfc3339("2024-02-29T07:08:09.123456Z");
  EXPECT_EQ(format_rfc3339_millis(t), "2024-02-29T07:08:09.123Z");
  EXPECT_EQ(format_micro_time(t), "2024-02-29T07:08:09.123456Z");
  EXPECT_EQ(parse_rfc3339(format_micro_time(t)), t);
  const TimePoint whole = *parse_rfc3339("2024-02-29T07:08:09Z");
  EXPECT_EQ(format_rfc3339_millis(whole), "2024-02-29T07:08:09Z");
  EXPECT_EQ(format_micro_time(whole), "2024-02-29T07:08:09.000000Z");
}

}  // namespace
}  // namespace hb::api
