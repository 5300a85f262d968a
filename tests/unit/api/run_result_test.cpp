// The result: what the runner renders, the operator parses back; what a
// hostile Pod writes is bounded, typed and clamped.
#include "api/run_result.h"

#include <gtest/gtest.h>

#include <cmath>

#include "api/stop_reason.h"
#include "api/utf8.h"

namespace hb::api {
namespace {

using nlohmann::json;

RunResult full_result() {
  RunResult r;
  r.stop_reason = "pause_heartbeats";
  r.input_tokens = 1200;
  r.output_tokens = 340;
  r.cache_read_input_tokens = 800;
  r.cache_write_input_tokens = 100;
  r.estimated_usage = {"outputTokens"};
  r.cost_cents = 0.125;
  r.llm_calls = 3;
  r.tool_calls = 2;
  r.iterations = 3;
  r.pause_minutes = 15;
  r.pause_until = *parse_rfc3339("2024-05-01T12:20:00.500Z");
  r.output = "All quiet \xE2\x82\xAC.";
  r.error = "";
  r.notes = {"archival memory is not configured"};
  r.started_at = *parse_rfc3339("2024-05-01T12:00:00Z");
  r.finished_at = *parse_rfc3339("2024-05-01T12:05:00.125Z");
  r.last_beat = *parse_rfc3339("2024-05-01T12:04:59Z");
  r.stdout_excerpt = "{\"event\":\"result\"}\n";
  r.stderr_excerpt = "2024-05-01T12:05:00Z info heartbeat finished\n";
  r.transcript = TranscriptRecord{2048, std::string(64, 'a'), true, false, ""};
  return r;
}

TEST(RunResultContract, RenderThenParseIsTheSameResult) {
  const RunResult result = full_result();
  const std::string text = render_result(result);
  ASSERT_LE(text.size(), kTerminationMessageBytesMax);
  const ParsedResult parsed = parse_run_result(text);
  ASSERT_TRUE(parsed.result) << parsed.problem;
  EXPECT_EQ(*parsed.result, result);

  RunResult failed = full_result();
  failed.stop_reason = "provider_error";
  failed.pause_minutes.reset();
  failed.pause_until.reset();
  failed.error = "429 from the provider";
  EXPECT_EQ(*parse_run_result(render_result(failed)).result, failed);
}

// Cache counts are parts of inputTokens: more than it is not believed.
TEST(RunResultContract, CacheCountsAreBelievedOnlyWithinTheInput) {
  json doc = result_to_json(full_result());
  doc["usage"]["cacheReadInputTokens"] = 1101;  // with 100 written: past 1200
  EXPECT_EQ(parse_run_result(doc.dump()).result->cache_read_input_tokens, 0);
  EXPECT_EQ(parse_run_result(doc.dump()).result->cache_write_input_tokens, 0);
  doc["usage"]["cacheReadInputTokens"] = 1100;
  doc["usage"].erase("cacheWriteInputTokens");
  EXPECT_EQ(parse_run_result(doc.dump()).result->cache_read_input_tokens, 1100);
  doc["usage"]["cacheReadInputTokens"] = -1;
  EXPECT_EQ(parse_run_result(doc.dump()).result->cache_read_input_tokens, 0);
}

// The ends of stdout and stderr fit the termination message with a long
// output: the output gives way first, then each excerpt keeps its end.
TEST(RunResultContract, ExcerptsKeepTheirEndsWithinTheBound) {
  RunResult result = full_result();
  result.output = std::string(10000, 'y');
  result.stdout_excerpt = std::string(2000, '"') + "last line of stdout";
  result.stderr_excerpt = std::string(2000, '\\') + "last line of stderr";
  const std::string text = render_result(result);
  ASSERT_LE(text.size(), kTerminationMessageBytesMax);
  const ParsedResult parsed = parse_run_result(text);
  ASSERT_TRUE(parsed.result) << parsed.problem;
  EXPECT_TRUE(parsed.result->stdout_excerpt.ends_with("last line of stdout"));
  EXPECT_TRUE(parsed.result->stderr_excerpt.ends_with("last line of stderr"));
  EXPECT_LE(utf8_length(parsed.result->stdout_excerpt), kLogExcerptCharsMax);
  EXPECT_TRUE(parsed.result->transcript);
}

// What a custom runner (or a forged message) puts there is believed only
// in shape: excerpts cut to their last characters, a transcript record
// whole or not at all.
TEST(RunResultContract, HostileLogFieldsAreBoundedOrDropped) {
  json doc = json::parse(render_result(full_result()));
  std::string long_text;
  for (int i = 0; i < 900; ++i) long_text += "\xE2\x82\xAC";  // 900 characters, 2,700 bytes
  doc["stdoutExcerpt"] = long_text;
  auto parsed = parse_run_result(doc.dump());
  ASSERT_TRUE(parsed.result) << parsed.problem;
  EXPECT_EQ(utf8_length(parsed.result->stdout_excerpt), kLogExcerptCharsMax);
  EXPECT_EQ(sanitize_utf8(parsed.result->stdout_excerpt), parsed.result->stdout_excerpt);
  doc.erase("stdoutExcerpt");
  for (json bad : {json{{"bytes", -1}, {"sha256", std::string(64, 'a')}},
                   json{{"bytes", 10}, {"sha256", "../../etc/passwd"}},
                   json{{"bytes", 10}, {"sha256", std::string(64, 'A')}},
                   json{{"bytes", 10}, {"sha256", std::string(64, 'a')}, {"compressed", "yes"}},
                   json{{"bytes", "10"}, {"sha256", std::string(64, 'a')}}, json("file")}) {
    doc["transcript"] = bad;
    parsed = parse_run_result(doc.dump());
    ASSERT_TRUE(parsed.result) << bad.dump();
    EXPECT_FALSE(parsed.result->transcript) << bad.dump();
  }
  doc["transcript"] = {
      {"bytes", 10}, {"sha256", std::string(64, 'b')}, {"note", std::string(1000, 'n')}};
  parsed = parse_run_result(doc.dump());
  ASSERT_TRUE(parsed.result) << parsed.problem;
  ASSERT_TRUE(parsed.result->transcript);
  EXPECT_EQ(parsed.result->transcript->note.size(), kTranscriptNoteBytesMax);
}

TEST(RunResultContract, AShapedResultStillParses) {
  RunResult result = full_result();
  result.output = std::string(10000, 'y');
  const ParsedResult parsed = parse_run_result(render_result(result));
  ASSERT_TRUE(parsed.result) << parsed.problem;
  EXPECT_LT(parsed.result->output.size(), 4096u);
  EXPECT_EQ(parsed.result->input_tokens, 1200);
}

TEST(RunResultContract, UnreadableMessagesSayWhy) {
  EXPECT_EQ(parse_run_result("").problem, "the termination message is empty");
  EXPECT_EQ(parse_run_result(std::string(kTerminationMessageBytesMax + 1, ' ')).problem,
            "the termination message is longer than 4096 bytes");
  EXPECT_EQ(parse_run_result(std::string(2000, '[') + std::string(2000, ']')).problem,
            "the termination message is nested too deeply");
  EXPECT_EQ(parse_run_result(R"({"usage":{"a":{"b":{"c":{"d":{"e":{"f":{"g":{}}}}}}}}})").problem,
            "the termination message is nested too deeply");
  EXPECT_EQ(parse_run_result("[1,2]").problem, "the termination message is not a JSON object");
  EXPECT_EQ(parse_run_result("{\"usage\":").problem,
            "the termination message is not a JSON object");
  EXPECT_EQ(parse_run_result(R"({"stopReason":"completed"})").problem,
            "the result has no usage object");
  EXPECT_EQ(parse_run_result(R"({"usage":7})").problem, "the result has no usage object");
}

TEST(RunResultContract, WrongTypesAreIgnoredOrFlagged) {
  const ParsedResult parsed = parse_run_result(
      R"({"stopReason":7,"usage":{"inputTokens":-5,"outputTokens":"9","costCents":-1},
          "pauseMinutes":"10","output":["x"],"error":{},"notes":[1,"kept"],
          "lastBeatTime":"yesterday","startedAt":12})");
  ASSERT_TRUE(parsed.result) << parsed.problem;
  const RunResult& r = *parsed.result;
  EXPECT_EQ(r.stop_reason, "");
  EXPECT_EQ(r.usage_problem.rfind("usage.inputTokens ", 0), 0u) << r.usage_problem;
  ASSERT_TRUE(r.cost_cents);
  EXPECT_TRUE(std::isnan(*r.cost_cents));
  EXPECT_FALSE(r.pause_minutes);
  EXPECT_EQ(r.output, "");
  EXPECT_EQ(r.error, "");
  EXPECT_EQ(r.notes, std::vector<std::string>{"kept"});
  EXPECT_FALSE(r.last_beat);
  EXPECT_FALSE(r.started_at);
}

TEST(RunResultContract, PauseMinutesAreClamped) {
  auto pause = [](const char* minutes) {
    return parse_run_result(std::string(R"({"usage":{},"pauseMinutes":)") + minutes + "}")
        .result->pause_minutes;
  };
  EXPECT_EQ(pause("0"), kPauseMinutesMin);
  EXPECT_EQ(pause("-1e300"), kPauseMinutesMin);
  EXPECT_EQ(pause("1e300"), kPauseMinutesMax);
  EXPECT_EQ(pause("14.6"), 15);
  EXPECT_EQ(pause("30"), 30);
}

// Not money, so never charged: a malformed count is only not believed (the
// run is then not idle by it), and a count above toolCalls is a lie.
TEST(RunResultContract, ActionToolCallsIsBelievedOnlyAsACountUpToToolCalls) {
  auto actions = [](const std::string& usage) {
    const ParsedResult parsed = parse_run_result(R"({"usage":)" + usage + "}");
    EXPECT_TRUE(parsed.result) << parsed.problem;
    EXPECT_EQ(parsed.result->usage_problem, "") << usage;
    return parsed.result->action_tool_calls;
  };
  EXPECT_EQ(actions(R"({"toolCalls":3,"actionToolCalls":2})"), 2);
  EXPECT_EQ(actions(R"({"toolCalls":3,"actionToolCalls":0})"), 0);
  EXPECT_EQ(actions(R"({"toolCalls":3})"), std::nullopt);
  EXPECT_EQ(actions(R"({"toolCalls":3,"actionToolCalls":null})"), std::nullopt);
  EXPECT_EQ(actions(R"({"toolCalls":3,"actionToolCalls":4})"), std::nullopt);
  EXPECT_EQ(actions(R"({"toolCalls":3,"actionToolCalls":-1})"), std::nullopt);
  EXPECT_EQ(actions(R"({"toolCalls":3,"actionToolCalls":"0"})"), std::nullopt);
  EXPECT_EQ(actions(R"({"toolCalls":3,"actionToolCalls":0.5})"), std::nullopt);
  EXPECT_EQ(actions(R"({"toolCalls":3,"actionToolCalls":1e300})"), std::nullopt);
  EXPECT_EQ(actions(R"({"toolCalls":3,"actionToolCalls":18446744073709551615})"), std::nullopt);

  RunResult r;
  r.tool_calls = 4;
  r.action_tool_calls = 1;
  EXPECT_EQ(parse_run_result(render_result(r)).result->action_tool_calls, 1);
  r.action_tool_calls.reset();
  EXPECT_FALSE(result_to_json(r)["usage"].contains("actionToolCalls"));
}

TEST(RunResultContract, AnyStopReasonTextIsKeptForCustomRunners) {
  const ParsedResult parsed = parse_run_result(R"({"stopReason":"end_turn","usage":{}})");
  ASSERT_TRUE(parsed.result);
  EXPECT_EQ(parsed.result->stop_reason, "end_turn");
  EXPECT_FALSE(parse_stop_reason("end_turn"));
  EXPECT_EQ(parse_stop_reason("budget"), StopReason::kBudget);
  EXPECT_EQ(to_string(StopReason::kToolsUnavailable), "tools_unavailable");
}

}  // namespace
}  // namespace hb::api
