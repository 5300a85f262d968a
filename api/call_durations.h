// A run's model-call durations (issue 61): the runner times each `chat`
// operation and reports a fixed-size histogram in its result, from which the
// operator observes gen_ai.client.operation.duration. The buckets are the
// OpenTelemetry GenAI conventions' advisory boundaries, fixed by this
// contract (never sent). Calls that failed are kept apart, one histogram per
// error type of a fixed vocabulary (the conventions' error.type, which they
// ask an instrumentation to keep low in cardinality and to document). The
// summary is the runner's claim: both sides call call_durations_problem
// before believing one. Pure.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace hb::api {

// Upper bounds of the buckets, in seconds; a last bucket counts the calls
// longer than the last bound.
inline constexpr std::array<double, 14> kCallDurationBoundsSeconds = {
    0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92};
inline constexpr std::size_t kCallDurationBucketCount = kCallDurationBoundsSeconds.size() + 1;
// The sum is written in milliseconds' resolution; the checks of a sum
// against its buckets allow this much rounding.
inline constexpr double kCallDurationSumToleranceSeconds = 0.001;

// How a failed call ended (ProviderError's kinds, an HTTP status by class).
enum class CallErrorType {
  kTimeout,
  kTransport,
  kClientError,
  kServerError,
  kQuota,
  kBadResponse,
  kCancelled,
  kOther
};
inline constexpr std::size_t kCallErrorTypeCount = 8;
// The error.type values, by CallErrorType; kOther is the conventions' fallback.
inline constexpr std::array<std::string_view, kCallErrorTypeCount> kCallErrorTypeNames = {
    "timeout", "transport", "4xx", "5xx", "quota", "bad_response", "cancelled", "_OTHER"};
static_assert(static_cast<std::size_t>(CallErrorType::kOther) + 1 == kCallErrorTypeCount);

std::string_view call_error_type_name(CallErrorType type);
// The type named `name`; kOther for a name outside the vocabulary.
CallErrorType call_error_type_of(std::string_view name);
// A failed HTTP exchange's type by its status class (4xx, 5xx; kOther else).
CallErrorType call_error_type_of_status(int status);

// One histogram of call durations.
struct DurationBuckets {
  // counts[i]: the calls that took at most kCallDurationBoundsSeconds[i]
  // and more than the bound before it (not cumulative).
  std::array<int64_t, kCallDurationBucketCount> counts{};
  double sum_seconds = 0;
  bool operator==(const DurationBuckets&) const = default;
};

// The calls that answered (the base), and those that failed by error type.
struct CallDurations : DurationBuckets {
  std::array<DurationBuckets, kCallErrorTypeCount> failed{};
  bool operator==(const CallDurations&) const = default;
  DurationBuckets& failed_of(CallErrorType type) { return failed[static_cast<std::size_t>(type)]; }
  const DurationBuckets& failed_of(CallErrorType type) const {
    return failed[static_cast<std::size_t>(type)];
  }
};

int64_t call_count(const DurationBuckets& buckets);  // saturating
// Every call, answered or failed (saturating).
int64_t all_calls(const CallDurations& durations);
// Adds one call of `seconds` (negative counts as 0).
void add_call(DurationBuckets& buckets, double seconds);
// Adds one call that failed as `type`.
void add_failed_call(CallDurations& durations, CallErrorType type, double seconds);

// Why `durations` cannot be true of a run of at most `calls_max` model calls
// and `seconds_max` seconds; empty when it can: every count non-negative,
// the total of answered and failed calls within calls_max, their sums
// together within seconds_max, and each histogram's sum finite and within
// what its buckets allow (each call above its bucket's lower bound, at most
// its upper one).
std::string call_durations_problem(const CallDurations& durations, int64_t calls_max,
                                   double seconds_max);

// {"bucketCounts":[15 counts],"sumSeconds":s,"failed":{TYPE:{same},...}},
// sums rounded to milliseconds; "failed" holds only the types with calls and
// is left out when none failed.
nlohmann::json call_durations_to_json(const CallDurations& durations);
// Nullopt and `problem` set when `value` is not that shape (a wrong count of
// buckets, a count that is not a non-negative integer, a sum that is not a
// non-negative finite number, "failed" not an object of such histograms). A
// failed type named outside the vocabulary, however long, is counted as
// kOther (a newer runner's type is still a failed call).
std::optional<CallDurations> call_durations_from_json(const nlohmann::json& value,
                                                      std::string& problem);

}  // namespace hb::api
