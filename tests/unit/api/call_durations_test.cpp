// The model-call duration summary in the result: rendered by the runner,
// parsed back by the operator; a forged one is dropped, never the result.
#include "api/call_durations.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "api/run_result.h"

namespace hb::api {
namespace {

using nlohmann::json;

constexpr double kNoWallLimit = std::numeric_limits<double>::infinity();

RunResult result_with_calls(int64_t calls) {
  RunResult r;
  r.stop_reason = "completed";
  r.llm_calls = calls;
  r.iterations = calls;
  return r;
}

// The result as the runner renders it, with `durations` in place of the summary.
std::string rendered_with(const json& durations, int64_t calls = 3) {
  json doc = result_to_json(result_with_calls(calls));
  doc["modelCallDurations"] = durations;
  return doc.dump();
}

TEST(CallDurations, AddCallFindsTheBucketByItsUpperBound) {
  CallDurations d;
  add_call(d, 0.005);  // first bucket
  add_call(d, 0.01);   // at a bound: that bucket
  add_call(d, 0.011);  // the next
  add_call(d, 100.0);  // past the last bound
  add_call(d, -1.0);   // a clock stepped back: 0
  EXPECT_EQ(d.counts[0], 3);
  EXPECT_EQ(d.counts[1], 1);
  EXPECT_EQ(d.counts[kCallDurationBucketCount - 1], 1);
  EXPECT_EQ(call_count(d), 5);
  EXPECT_DOUBLE_EQ(d.sum_seconds, 0.005 + 0.01 + 0.011 + 100.0);
}

TEST(CallDurations, RoundTripsThroughTheResult) {
  RunResult r = result_with_calls(3);
  CallDurations d;
  add_call(d, 0.5);
  add_call(d, 1.25);
  add_call(d, 3.0);
  r.call_durations = d;
  const ParsedResult parsed = parse_run_result(render_result(r));
  ASSERT_TRUE(parsed.result);
  ASSERT_TRUE(parsed.result->call_durations);
  EXPECT_EQ(parsed.result->call_durations->counts, d.counts);
  EXPECT_NEAR(parsed.result->call_durations->sum_seconds, 4.75, 1e-9);
  EXPECT_TRUE(parsed.result->call_durations_problem.empty());
}

TEST(CallDurations, AbsentIsNoProblem) {
  const ParsedResult parsed = parse_run_result(result_to_json(result_with_calls(2)).dump());
  ASSERT_TRUE(parsed.result);
  EXPECT_FALSE(parsed.result->call_durations);
  EXPECT_TRUE(parsed.result->call_durations_problem.empty());
}

// Each forged summary is dropped with a reason; the usage still stands.
TEST(CallDurations, ForgedSummariesAreDroppedNotTheResult) {
  json fifteen = json::array();
  for (std::size_t i = 0; i < kCallDurationBucketCount; ++i) fifteen.push_back(0);
  json oversized = {{"bucketCounts", json::array()}, {"sumSeconds", 0}};
  for (std::size_t i = 0; i < kCallDurationBucketCount + 1; ++i) {
    oversized["bucketCounts"].push_back(0);
  }
  json negative = {{"bucketCounts", fifteen}, {"sumSeconds", 0}};
  negative["bucketCounts"][0] = -1;
  json too_many = {{"bucketCounts", fifteen}, {"sumSeconds", 0.0}};
  too_many["bucketCounts"][0] = 4;  // the result made 3 calls
  json fraction = {{"bucketCounts", fifteen}, {"sumSeconds", 0}};
  fraction["bucketCounts"][0] = 0.5;
  json huge_count = {{"bucketCounts", fifteen}, {"sumSeconds", 0}};
  huge_count["bucketCounts"][0] = std::numeric_limits<uint64_t>::max();
  json sum_outside = {{"bucketCounts", fifteen}, {"sumSeconds", 50.0}};
  sum_outside["bucketCounts"][0] = 1;  // one call of at most 10 ms cannot sum to 50 s
  json negative_sum = {{"bucketCounts", fifteen}, {"sumSeconds", -1}};
  json string_sum = {{"bucketCounts", fifteen}, {"sumSeconds", "1"}};
  for (const json& forged : {json("x"), json::object(), oversized, negative, too_many, fraction,
                             huge_count, sum_outside, negative_sum, string_sum}) {
    const ParsedResult parsed = parse_run_result(rendered_with(forged));
    ASSERT_TRUE(parsed.result) << forged.dump();
    EXPECT_FALSE(parsed.result->call_durations) << forged.dump();
    EXPECT_FALSE(parsed.result->call_durations_problem.empty()) << forged.dump();
    EXPECT_EQ(parsed.result->llm_calls, 3) << forged.dump();
  }
}

// JSON text carries no NaN and the parser refuses a number past double's
// range, so only a document built in memory holds one; refused all the same.
TEST(CallDurations, ANonFiniteSumIsRefused) {
  json counts = json::array();
  for (std::size_t i = 0; i < kCallDurationBucketCount; ++i) counts.push_back(0);
  for (const double sum : {std::numeric_limits<double>::infinity(), std::nan("")}) {
    std::string problem;
    EXPECT_FALSE(
        call_durations_from_json({{"bucketCounts", counts}, {"sumSeconds", sum}}, problem));
    EXPECT_NE(problem, "");
  }
}

TEST(CallDurations, ProblemNamesNanAndTheWallTime) {
  CallDurations d;
  add_call(d, 2.0);
  EXPECT_EQ(call_durations_problem(d, 1, 10.0), "");
  EXPECT_NE(call_durations_problem(d, 1, 1.5), "");   // longer than the run
  EXPECT_NE(call_durations_problem(d, 0, 10.0), "");  // more calls than the run made
  d.sum_seconds = std::nan("");
  EXPECT_NE(call_durations_problem(d, 1, kNoWallLimit), "");
}

// The summary at its most (every count as long as any run's calls could
// make it) keeps the result within the termination message.
TEST(CallDurations, AtItsLargestTheResultStillFits) {
  RunResult r = result_with_calls(std::numeric_limits<int64_t>::max());
  r.output = std::string(8000, 'x');
  r.error = std::string(600, 'e');
  r.stdout_excerpt = std::string(kLogExcerptCharsMax, 'o');
  r.stderr_excerpt = std::string(kLogExcerptCharsMax, 'e');
  CallDurations d;
  d.counts.fill(std::numeric_limits<int64_t>::max() / kCallDurationBucketCount);
  d.sum_seconds = 1e21;  // past what the counts' lower bounds add up to
  for (DurationBuckets& failed : d.failed) failed = d;
  r.call_durations = d;
  const std::string text = render_result(r);
  EXPECT_LE(text.size(), kTerminationMessageBytesMax);
  EXPECT_LE(call_durations_to_json(d).dump().size(), 400u * (1 + kCallErrorTypeCount));
  const ParsedResult parsed = parse_run_result(text);
  ASSERT_TRUE(parsed.result);
  EXPECT_TRUE(parsed.result->call_durations);
}

// Failed calls are kept apart by error type, each a histogram of its own,
// and come back through the result as they went.
TEST(CallDurations, FailedCallsRoundTripByErrorType) {
  RunResult r = result_with_calls(4);
  CallDurations d;
  add_call(d, 0.5);
  add_call(d, 1.0);
  add_failed_call(d, CallErrorType::kTimeout, 60.0);
  add_failed_call(d, CallErrorType::kServerError, 0.2);
  r.call_durations = d;
  const json rendered = call_durations_to_json(d);
  ASSERT_TRUE(rendered.contains("failed")) << rendered.dump();
  EXPECT_EQ(rendered["failed"].size(), 2u) << "only the types with calls: " << rendered.dump();
  EXPECT_EQ(rendered["failed"]["timeout"]["bucketCounts"][13], 1) << rendered.dump();
  EXPECT_EQ(rendered["failed"]["5xx"]["bucketCounts"][5], 1) << rendered.dump();
  const ParsedResult parsed = parse_run_result(render_result(r));
  ASSERT_TRUE(parsed.result);
  ASSERT_TRUE(parsed.result->call_durations) << parsed.result->call_durations_problem;
  EXPECT_EQ(*parsed.result->call_durations, d);
  EXPECT_EQ(all_calls(d), 4);
  EXPECT_EQ(call_count(d), 2);
  // Without failures nothing of them is written.
  EXPECT_FALSE(call_durations_to_json(CallDurations{}).contains("failed"));
}

// The vocabulary is fixed: a type the contract does not name, however
// long, is counted as _OTHER, never kept under its own name.
TEST(CallDurations, AnUnknownOrOversizedErrorTypeCountsAsOther) {
  json one_call = json::array();
  for (std::size_t i = 0; i < kCallDurationBucketCount; ++i) one_call.push_back(0);
  one_call[3] = 1;  // 0.04 .. 0.08 s
  const json histogram = {{"bucketCounts", one_call}, {"sumSeconds", 0.05}};
  json durations = {{"bucketCounts", json::array()}, {"sumSeconds", 0}};
  for (std::size_t i = 0; i < kCallDurationBucketCount; ++i) {
    durations["bucketCounts"].push_back(0);
  }
  durations["failed"] = {{"rate_limited", histogram},
                         {std::string(1000, 'x'), histogram},
                         {"_OTHER", histogram},
                         {"timeout", histogram}};
  const ParsedResult parsed = parse_run_result(rendered_with(durations, 4));
  ASSERT_TRUE(parsed.result);
  ASSERT_TRUE(parsed.result->call_durations) << parsed.result->call_durations_problem;
  const CallDurations& d = *parsed.result->call_durations;
  EXPECT_EQ(call_count(d.failed_of(CallErrorType::kOther)), 3);
  EXPECT_NEAR(d.failed_of(CallErrorType::kOther).sum_seconds, 0.15, 1e-9);
  EXPECT_EQ(call_count(d.failed_of(CallErrorType::kTimeout)), 1);
  const json back = call_durations_to_json(d);
  EXPECT_EQ(back["failed"].size(), 2u) << back.dump();
  EXPECT_TRUE(back["failed"].contains("_OTHER")) << back.dump();
  EXPECT_EQ(call_error_type_of("rate_limited"), CallErrorType::kOther);
  EXPECT_EQ(call_error_type_of("4xx"), CallErrorType::kClientError);
  for (std::size_t i = 0; i < kCallErrorTypeCount; ++i) {
    EXPECT_EQ(call_error_type_name(static_cast<CallErrorType>(i)), kCallErrorTypeNames[i]);
    EXPECT_EQ(call_error_type_of(kCallErrorTypeNames[i]), static_cast<CallErrorType>(i));
  }
}

// A failed histogram is checked as the answered one, and its calls and
// time count against the run's: a forgery drops the summary, not the result.
TEST(CallDurations, ForgedFailedCallsAreDroppedNotTheResult) {
  json zeros = json::array();
  for (std::size_t i = 0; i < kCallDurationBucketCount; ++i) zeros.push_back(0);
  json one = zeros;
  one[5] = 1;  // 0.16 .. 0.32 s
  const json answered_one = {{"bucketCounts", one}, {"sumSeconds", 0.2}};
  json negative = zeros;
  negative[0] = -1;
  json three = zeros;
  three[5] = 3;
  for (const json& failed : {json{{"5xx", {{"bucketCounts", negative}, {"sumSeconds", 0}}}},
                             json{{"5xx", {{"bucketCounts", one}, {"sumSeconds", 5.0}}}},
                             json{{"5xx", {{"bucketCounts", three}, {"sumSeconds", 0.6}}}},
                             json{{"5xx", "slow"}}, json::array({answered_one}), json("x")}) {
    json durations = answered_one;
    durations["failed"] = failed;
    const ParsedResult parsed = parse_run_result(rendered_with(durations, 3));
    ASSERT_TRUE(parsed.result) << failed.dump();
    EXPECT_FALSE(parsed.result->call_durations) << failed.dump();
    EXPECT_FALSE(parsed.result->call_durations_problem.empty()) << failed.dump();
    EXPECT_EQ(parsed.result->llm_calls, 3) << failed.dump();
  }
  // One answered and two failed are three calls: believed.
  json two = zeros;
  two[5] = 2;
  json durations = answered_one;
  durations["failed"] = {{"5xx", {{"bucketCounts", two}, {"sumSeconds", 0.4}}}};
  EXPECT_TRUE(parse_run_result(rendered_with(durations, 3)).result->call_durations);
  // Their time counts against the run's too.
  CallDurations d;
  add_call(d, 2.0);
  add_failed_call(d, CallErrorType::kTimeout, 9.0);
  EXPECT_EQ(call_durations_problem(d, 2, 11.0), "");
  EXPECT_NE(call_durations_problem(d, 2, 10.0), "");
  EXPECT_NE(call_durations_problem(d, 1, 11.0), "");
}

}  // namespace
}  // namespace hb::api
