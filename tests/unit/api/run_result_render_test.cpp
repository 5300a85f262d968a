// The runner's side of the result: shaped to the limit, never cut JSON.
#include <gtest/gtest.h>

#include "api/rfc3339.h"
#include "api/run_result.h"
#include "api/utf8.h"

namespace hb::api {
namespace {

using nlohmann::json;

RunResult sample() {
  RunResult result;
  result.stop_reason = "pause_heartbeats";
  result.input_tokens = 1200;
  result.output_tokens = 340;
  result.cost_cents = 0.123456789;
  result.llm_calls = 2;
  result.tool_calls = 3;
  result.iterations = 2;
  result.pause_minutes = 5;
  result.pause_until = parse_rfc3339("2024-05-01T12:05:00Z");
  result.output = "done";
  return result;
}

TEST(RunResult, SmallResultIsComplete) {
  auto text = render_result(sample());
  auto doc = json::parse(text);
  EXPECT_EQ(doc["version"], 1);
  EXPECT_EQ(doc["stopReason"], "pause_heartbeats");
  EXPECT_EQ(doc["pauseMinutes"], 5);
  EXPECT_EQ(doc["pauseUntil"], "2024-05-01T12:05:00Z");
  EXPECT_EQ(doc["usage"]["inputTokens"], 1200);
  EXPECT_EQ(doc["usage"]["toolCalls"], 3);
  EXPECT_DOUBLE_EQ(doc["usage"]["costCents"].get<double>(), 0.123457);
  EXPECT_EQ(doc["output"], "done");
  EXPECT_FALSE(doc.contains("outputTruncated"));
  EXPECT_FALSE(doc.contains("error"));
}

TEST(RunResult, LongOutputIsShortenedNeverTheJson) {
  for (std::size_t size : {4000u, 4096u, 5000u, 100000u}) {
    RunResult result = sample();
    result.output = std::string(size, 'x');
    auto text = render_result(result);
    EXPECT_LE(text.size(), kTerminationMessageBytesMax);
    auto doc = json::parse(text);  // valid JSON
    EXPECT_EQ(doc["outputTruncated"], true);
    EXPECT_EQ(doc["outputBytes"], size);
    EXPECT_GT(doc["output"].get<std::string>().size(), 3000u) << "excerpt kept as long as fits";
    EXPECT_EQ(doc["pauseMinutes"], 5);
  }
}

TEST(RunResult, EscapingHeavyAndMultibyteOutputStillFits) {
  RunResult result = sample();
  std::string output;
  for (int i = 0; i < 3000; ++i)
    output += (i % 3 == 0) ? "\x01" : (i % 3 == 1 ? "\"" : "\xE2\x82\xAC");
  output += "\xFF\xFE";  // invalid UTF-8 too
  result.output = output;
  result.error = std::string(500, 'e');
  result.notes = {"note one", std::string(2000, 'n')};
  auto text = render_result(result);
  EXPECT_LE(text.size(), kTerminationMessageBytesMax);
  auto doc = json::parse(text);
  EXPECT_EQ(doc["stopReason"], "pause_heartbeats");
}

TEST(RunResult, HugeErrorAndNotesAreShortenedAfterOutput) {
  RunResult result = sample();
  result.output = std::string(3000, 'o');
  result.error = std::string(10000, 'e');
  result.notes = {std::string(3000, 'n')};
  auto text = render_result(result);
  EXPECT_LE(text.size(), kTerminationMessageBytesMax);
  auto doc = json::parse(text);
  EXPECT_FALSE(doc.contains("notes"));
  EXPECT_GT(doc["error"].get<std::string>().size(), 1000u);
  EXPECT_EQ(doc["usage"]["llmCalls"], 2);
}

TEST(RunResult, FuzzedSizesNeverPassTheLimit) {
  std::string pieces[] = {"a", "\xC3\xA9", "\\", "\n", "\xF0\x9F\x98\x80", "\x7F"};
  for (int n = 0; n < 200; ++n) {
    RunResult result = sample();
    for (int i = 0; i < n * 37; ++i) result.output += pieces[(i * 7 + n) % 6];
    result.error = std::string(static_cast<std::size_t>(n * 13), '!');
    auto text = render_result(result);
    ASSERT_LE(text.size(), kTerminationMessageBytesMax) << n;
    ASSERT_TRUE(json::accept(text)) << n;
  }
}

TEST(Text, TruncateKeepsCharactersWhole) {
  std::string euro = "\xE2\x82\xAC\xE2\x82\xAC";
  EXPECT_EQ(utf8_prefix(euro, 4), "\xE2\x82\xAC");
  EXPECT_EQ(utf8_suffix(euro, 4), "\xE2\x82\xAC");
  EXPECT_EQ(sanitize_utf8("a\xFF"
                          "b"),
            "a\xEF\xBF\xBD"
            "b");
  EXPECT_EQ(utf8_length("a\xE2\x82\xAC"), 2u);
  EXPECT_EQ(truncate_utf8("abcdef", 5), "ab\xE2\x80\xA6");
}

}  // namespace
}  // namespace hb::api
