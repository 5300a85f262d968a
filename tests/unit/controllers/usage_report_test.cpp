// The runner's usage report on the agent's Lease, read as hostile input.
#include "api/usage_report.h"

#include <gtest/gtest.h>

#include "api/json_depth.h"

namespace hb::api {
namespace {

TEST(UsageReport, RoundTrips) {
  UsageReport r{{2, 1500, 300, 1, 2}, "agent-1714565100"};
  DecodedUsageReport d = decode_usage_report(encode_usage_report(r));
  ASSERT_TRUE(d.report) << d.problem;
  EXPECT_EQ(*d.report, r);
}

TEST(UsageReport, RejectsWhatIsNotAReport) {
  const std::string deep(600, '[');
  const std::string huge = R"({"run":"r","inputTokens":1,"pad":")" + std::string(2000, 'x') + "\"}";
  for (const std::string& text :
       {std::string(""), std::string("[]"), std::string(R"({"inputTokens":1})"),
        std::string(R"({"run":"r","inputTokens":-1})"),
        std::string(R"({"run":"r","inputTokens":1.5})"),
        std::string(R"({"run":"r","outputTokens":18446744073709551615})"),
        std::string(R"({"run":"r","llmCalls":"2"})"), std::string(R"({"run":"r","x":{"y":[1]}})"),
        deep, huge}) {
    DecodedUsageReport d = decode_usage_report(text);
    EXPECT_FALSE(d.report) << text.substr(0, 60);
    EXPECT_FALSE(d.problem.empty()) << text.substr(0, 60);
  }
}

TEST(JsonDepth, CountsNestingOutsideStrings) {
  EXPECT_FALSE(json_nested_deeper_than(R"({"a":[1,{"b":2}]})", 3));
  EXPECT_TRUE(json_nested_deeper_than(R"({"a":[1,{"b":[2]}]})", 3));
  EXPECT_FALSE(json_nested_deeper_than(R"({"a":"[[[[[[[[\"[[[["})", 1));
  EXPECT_TRUE(json_nested_deeper_than(std::string(100000, '['), 128));
}

}  // namespace
}  // namespace hb::api
