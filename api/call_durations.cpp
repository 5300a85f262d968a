#include "api/call_durations.h"

#include <cmath>
#include <limits>

namespace hb::api {

using nlohmann::json;

int64_t call_count(const CallDurations& durations) {
  int64_t total = 0;
  for (const int64_t count : durations.counts) {
    if (count < 0) continue;
    total = count > std::numeric_limits<int64_t>::max() - total
                ? std::numeric_limits<int64_t>::max()
                : total + count;
  }
  return total;
}

void add_call(CallDurations& durations, double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) seconds = 0;
  std::size_t bucket = 0;
  while (bucket < kCallDurationBoundsSeconds.size() &&
         seconds > kCallDurationBoundsSeconds[bucket]) {
    ++bucket;
  }
  ++durations.counts[bucket];
  durations.sum_seconds += seconds;
}

namespace {

// The least and the most the calls in `durations` can have taken together;
// the most is infinite when a call is in the last (open) bucket.
std::pair<double, double> sum_range(const CallDurations& durations) {
  double least = 0, most = 0;
  for (std::size_t i = 0; i < kCallDurationBucketCount; ++i) {
    const auto count = static_cast<double>(durations.counts[i]);
    if (i > 0) least += count * kCallDurationBoundsSeconds[i - 1];
    most += i < kCallDurationBoundsSeconds.size()
                ? count * kCallDurationBoundsSeconds[i]
                : (count > 0 ? std::numeric_limits<double>::infinity() : 0);
  }
  return {least, most};
}

}  // namespace

std::string call_durations_problem(const CallDurations& durations, int64_t calls_max,
                                   double seconds_max) {
  for (const int64_t count : durations.counts) {
    if (count < 0) return "a bucket count is negative";
  }
  if (call_count(durations) > calls_max) {
    return "counts " + std::to_string(call_count(durations)) + " calls, more than the run's " +
           std::to_string(calls_max);
  }
  const double sum = durations.sum_seconds;
  if (!std::isfinite(sum) || sum < 0) return "the sum is not a non-negative finite number";
  if (sum > seconds_max + kCallDurationSumToleranceSeconds) {
    return "the sum is longer than the run's " + std::to_string(seconds_max) + " seconds";
  }
  const auto [least, most] = sum_range(durations);
  if (sum < least - kCallDurationSumToleranceSeconds ||
      sum > most + kCallDurationSumToleranceSeconds) {
    return "the sum does not fit its buckets";
  }
  return {};
}

json call_durations_to_json(const CallDurations& durations) {
  return {{"bucketCounts", durations.counts},
          {"sumSeconds", std::round(durations.sum_seconds * 1000) / 1000}};
}

std::optional<CallDurations> call_durations_from_json(const json& value, std::string& problem) {
  const auto counts = value.is_object() ? value.find("bucketCounts") : value.end();
  const auto sum = value.is_object() ? value.find("sumSeconds") : value.end();
  if (counts == value.end() || !counts->is_array() || counts->size() != kCallDurationBucketCount) {
    problem = "bucketCounts is not an array of " + std::to_string(kCallDurationBucketCount);
    return std::nullopt;
  }
  CallDurations durations;
  for (std::size_t i = 0; i < kCallDurationBucketCount; ++i) {
    const json& count = (*counts)[i];
    if (!count.is_number_integer() ||
        (count.is_number_unsigned() &&
         count.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) ||
        count.get<int64_t>() < 0) {
      problem = "a bucket count is not a non-negative integer";
      return std::nullopt;
    }
    durations.counts[i] = count.get<int64_t>();
  }
  if (sum == value.end() || !sum->is_number() || !std::isfinite(sum->get<double>()) ||
      sum->get<double>() < 0) {
    problem = "sumSeconds is not a non-negative finite number";
    return std::nullopt;
  }
  durations.sum_seconds = sum->get<double>();
  return durations;
}

}  // namespace hb::api
