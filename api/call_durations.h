// A run's model-call durations (issue 61): the runner times each `chat`
// operation and reports a fixed-size histogram in its result, from which the
// operator observes gen_ai.client.operation.duration. The buckets are the
// OpenTelemetry GenAI conventions' advisory boundaries, fixed by this
// contract (never sent). The summary is the runner's claim: both sides call
// call_durations_problem before believing one. Pure.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace hb::api {

// Upper bounds of the buckets, in seconds; a last bucket counts the calls
// longer than the last bound.
inline constexpr std::array<double, 14> kCallDurationBoundsSeconds = {
    0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92};
inline constexpr std::size_t kCallDurationBucketCount = kCallDurationBoundsSeconds.size() + 1;
// The sum is written in milliseconds' resolution; the checks of a sum
// against its buckets allow this much rounding.
inline constexpr double kCallDurationSumToleranceSeconds = 0.001;

struct CallDurations {
  // counts[i]: the calls that took at most kCallDurationBoundsSeconds[i]
  // and more than the bound before it (not cumulative).
  std::array<int64_t, kCallDurationBucketCount> counts{};
  double sum_seconds = 0;
  bool operator==(const CallDurations&) const = default;
};

int64_t call_count(const CallDurations& durations);  // saturating
// Adds one call of `seconds` (negative counts as 0).
void add_call(CallDurations& durations, double seconds);

// Why `durations` cannot be true of a run of at most `calls_max` model calls
// and `seconds_max` seconds; empty when it can: every count non-negative,
// their total within calls_max, the sum finite, within seconds_max and
// within what its buckets allow (each call above its bucket's lower bound,
// at most its upper one).
std::string call_durations_problem(const CallDurations& durations, int64_t calls_max,
                                   double seconds_max);

// {"bucketCounts":[15 counts],"sumSeconds":s}, the sum rounded to milliseconds.
nlohmann::json call_durations_to_json(const CallDurations& durations);
// Nullopt and `problem` set when `value` is not that shape (a wrong count of
// buckets, a count that is not a non-negative integer, a sum that is not a
// non-negative finite number).
std::optional<CallDurations> call_durations_from_json(const nlohmann::json& value,
                                                      std::string& problem);

}  // namespace hb::api
