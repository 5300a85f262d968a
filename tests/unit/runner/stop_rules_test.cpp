#include "runner/stop_rules.h"

#include <gtest/gtest.h>

#include "api/rfc3339.h"
#include "runner/cost.h"
#include "runner/retry_policy.h"

namespace hb::runner {
namespace {

using namespace std::chrono_literals;

TEST(RepeatedCalls, ThreeIdenticalInARowStop) {
  RepeatedCallDetector detector;
  EXPECT_FALSE(detector.record("shell", R"({"command":"ls"})"));
  EXPECT_FALSE(detector.record("shell", R"({ "command" : "ls" })"));
  EXPECT_TRUE(detector.record("shell", R"({"command":"ls"})"));
}

TEST(RepeatedCalls, AnyDifferenceResetsTheStreak) {
  RepeatedCallDetector detector;
  EXPECT_FALSE(detector.record("shell", R"({"command":"ls"})"));
  EXPECT_FALSE(detector.record("shell", R"({"command":"ls"})"));
  EXPECT_FALSE(detector.record("shell", R"({"command":"pwd"})"));
  EXPECT_FALSE(detector.record("shell", R"({"command":"ls"})"));
  EXPECT_FALSE(detector.record("core_memory_append", R"({"command":"ls"})"));
  EXPECT_EQ(detector.streak(), 1);
}

TEST(RepeatedCalls, KeyOrderDoesNotMatterMalformedComparedAsText) {
  EXPECT_EQ(canonical_arguments(R"({"b":1,"a":2})"), canonical_arguments(R"({"a":2, "b":1})"));
  EXPECT_EQ(canonical_arguments("{oops"), "{oops");
}

TEST(Bounds, OrderAndEdges) {
  TimePoint now = *api::parse_rfc3339("2024-05-01T12:00:00Z");
  BoundsInput input{0, 5, now, now + 1min, 0, 1, 10.0, 0, 0, std::nullopt};
  EXPECT_FALSE(check_bounds_before_call(input).has_value());
  input.iterations_done = 5;
  EXPECT_EQ(check_bounds_before_call(input), StopReason::kMaxIterations);
  input.iterations_done = 4;
  input.now = now + 1min;
  EXPECT_EQ(check_bounds_before_call(input), StopReason::kDeadline);
  input.now = now;
  input.spent_cents = 9;
  input.next_call_worst_cents = 1;
  EXPECT_FALSE(check_bounds_before_call(input).has_value()) << "exactly at the budget is allowed";
  input.next_call_worst_cents = 1.01;
  EXPECT_EQ(check_bounds_before_call(input), StopReason::kBudget);
  input.budget_cents.reset();
  EXPECT_FALSE(check_bounds_before_call(input).has_value());
  EXPECT_EQ(wall_deadline_for(now), now - 20s);
}

// The day's budget is part of the run's budget; passing it says daily_budget.
TEST(Bounds, TheDaysBudgetStopsWithItsOwnReason) {
  TimePoint now = *api::parse_rfc3339("2024-05-01T12:00:00Z");
  BoundsInput input{0, 5, now, now + 1min, 9, 1.5, 10.0, 0, 0, std::nullopt};
  EXPECT_EQ(check_bounds_before_call(input), StopReason::kBudget) << "control: no day";
  input.day_budget_cents = 10.0;
  EXPECT_EQ(check_bounds_before_call(input), StopReason::kDailyBudget);
  input.next_call_worst_cents = 1;
  EXPECT_FALSE(check_bounds_before_call(input).has_value()) << "exactly at the day is allowed";
  EXPECT_EQ(api::to_string(StopReason::kDailyBudget), "daily_budget");
  EXPECT_EQ(api::parse_stop_reason("daily_budget"), StopReason::kDailyBudget);
}

TEST(Bounds, PerRunTokensStopsAfterTheOtherBounds) {
  TimePoint now = *api::parse_rfc3339("2024-05-01T12:00:00Z");
  BoundsInput input{0, 5, now, now + 1min, 0, 1, std::nullopt, 900, 100, 1000};
  EXPECT_FALSE(check_bounds_before_call(input).has_value()) << "exactly at the cap is allowed";
  input.next_call_worst_tokens = 101;
  EXPECT_EQ(check_bounds_before_call(input), StopReason::kPerRunTokenBudget);
  input.budget_cents = 0.5;
  EXPECT_EQ(check_bounds_before_call(input), StopReason::kBudget) << "cents are checked first";
  input.budget_cents.reset();
  input.budget_tokens.reset();
  EXPECT_FALSE(check_bounds_before_call(input).has_value()) << "no cap: no stop";
  EXPECT_EQ(to_string(StopReason::kPerRunTokenBudget), "per_run_token_budget");
  EXPECT_EQ(api::parse_stop_reason("per_run_token_budget"), StopReason::kPerRunTokenBudget);
}

TEST(Bounds, StopReasonNames) {
  EXPECT_EQ(to_string(StopReason::kPauseHeartbeats), "pause_heartbeats");
  EXPECT_EQ(to_string(StopReason::kRepeatedToolCall), "repeated_tool_call");
  EXPECT_EQ(to_string(StopReason::kBudget), "budget");
}

TEST(Cost, FromUsageAndWorstCase) {
  api::Pricing pricing{300, 1500};  // cents per million tokens
  EXPECT_DOUBLE_EQ(cost_cents({1'000'000, 0}, pricing), 300);
  EXPECT_DOUBLE_EQ(cost_cents({1000, 1000}, pricing), 1.8);
  ModelRequest request;
  request.system = std::string(3000, 's');
  request.max_tokens = 1000;
  EXPECT_EQ(estimate_input_tokens(request), 1000);
  EXPECT_DOUBLE_EQ(worst_case_call_cents(request, pricing), 1.8);
}

// The runner's own figure prices cache reads and writes as the operator does
// (a cross-check that agrees), and counts past the input as none.
TEST(Cost, CacheReadsAndWritesAtTheirPrices) {
  api::Pricing pricing{300, 1500, 30, 375};
  // 200 uncached x 300 + 600 read x 30 + 200 written x 375 + 100 out x 1500.
  EXPECT_DOUBLE_EQ(cost_cents({1000, 100}, 600, 200, pricing), 0.303);
  EXPECT_DOUBLE_EQ(cost_cents({1000, 100}, 1001, 0, pricing), 0.45);
  EXPECT_DOUBLE_EQ(cost_cents({1000, 100}, 600, 401, pricing), 0.45);
  const api::Pricing unset{300, 1500};
  EXPECT_DOUBLE_EQ(cost_cents({1000, 100}, 600, 200, unset), 0.45);
}

TEST(Retry, RetryableStatuses) {
  std::map<std::string, std::string> none;
  for (int status : {408, 409, 429, 500, 502, 503, 529})
    EXPECT_TRUE(is_retryable_status(status, none)) << status;
  for (int status : {400, 401, 403, 404, 422})
    EXPECT_FALSE(is_retryable_status(status, none)) << status;
  EXPECT_FALSE(is_retryable_status(503, {{"x-should-retry", "false"}}));
  EXPECT_TRUE(is_retryable_status(400, {{"x-should-retry", "true"}}));
}

TEST(Retry, ParsesRetryAfterForms) {
  TimePoint now = *api::parse_rfc3339("2015-10-21T07:28:00Z");
  EXPECT_EQ(parse_retry_after({{"retry-after-ms", "1500"}}, now), 1500ms);
  EXPECT_EQ(parse_retry_after({{"retry-after-ms", "12.2"}, {"retry-after", "9"}}, now), 13ms);
  EXPECT_EQ(parse_retry_after({{"retry-after", "3"}}, now), 3000ms);
  EXPECT_EQ(parse_retry_after({{"retry-after", "0.5"}}, now), 500ms);
  EXPECT_EQ(parse_retry_after({{"retry-after", "Wed, 21 Oct 2015 07:28:07 GMT"}}, now), 7000ms);
  EXPECT_EQ(parse_retry_after({{"retry-after", "Wed, 21 Oct 2015 07:27:00 GMT"}}, now), 0ms);
  EXPECT_FALSE(parse_retry_after({{"retry-after", "soon"}}, now).has_value());
  EXPECT_FALSE(parse_retry_after({{"retry-after", "-1"}}, now).has_value());
  EXPECT_FALSE(parse_retry_after({}, now).has_value());
}

TEST(Retry, BackoffWithJitterAndCaps) {
  EXPECT_EQ(retry_delay(0, std::nullopt, 0.0), 500ms);
  EXPECT_EQ(retry_delay(0, std::nullopt, 0.999999), 375ms);
  EXPECT_EQ(retry_delay(1, std::nullopt, 0.0), 1000ms);
  EXPECT_EQ(retry_delay(3, std::nullopt, 0.0), 4000ms);
  EXPECT_EQ(retry_delay(10, std::nullopt, 0.0), 8000ms);
  EXPECT_EQ(retry_delay(0, 2500ms, 0.5), 2500ms) << "a server hint is honoured as is";
  EXPECT_EQ(retry_delay(0, 10min, 0.5), 60000ms) << "up to the cap";
  EXPECT_EQ(retry_delay(2, 0ms, 0.0), 2000ms) << "a zero hint falls back to backoff";
}

}  // namespace
}  // namespace hb::runner
