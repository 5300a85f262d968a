#include "api/call_durations.h"

#include <cmath>
#include <limits>

#include "api/saturating.h"

namespace hb::api {

using nlohmann::json;

std::string_view call_error_type_name(CallErrorType type) {
  return kCallErrorTypeNames[static_cast<std::size_t>(type)];
}

CallErrorType call_error_type_of(std::string_view name) {
  for (std::size_t i = 0; i < kCallErrorTypeCount; ++i) {
    if (kCallErrorTypeNames[i] == name) return static_cast<CallErrorType>(i);
  }
  return CallErrorType::kOther;
}

CallErrorType call_error_type_of_status(int status) {
  if (status >= 400 && status < 500) return CallErrorType::kClientError;
  if (status >= 500 && status < 600) return CallErrorType::kServerError;
  return CallErrorType::kOther;
}

int64_t call_count(const DurationBuckets& buckets) {
  int64_t total = 0;
  for (const int64_t count : buckets.counts) {
    if (count > 0) total = saturating_add(total, count);
  }
  return total;
}

int64_t all_calls(const CallDurations& durations) {
  int64_t total = call_count(durations);
  for (const DurationBuckets& failed : durations.failed) {
    total = saturating_add(total, call_count(failed));
  }
  return total;
}

void add_call(DurationBuckets& buckets, double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) seconds = 0;
  std::size_t bucket = 0;
  while (bucket < kCallDurationBoundsSeconds.size() &&
         seconds > kCallDurationBoundsSeconds[bucket]) {
    ++bucket;
  }
  ++buckets.counts[bucket];
  buckets.sum_seconds += seconds;
}

void add_failed_call(CallDurations& durations, CallErrorType type, double seconds) {
  add_call(durations.failed_of(type), seconds);
}

namespace {

// The least and the most the calls in `buckets` can have taken together;
// the most is infinite when a call is in the last (open) bucket.
std::pair<double, double> sum_range(const DurationBuckets& buckets) {
  double least = 0, most = 0;
  for (std::size_t i = 0; i < kCallDurationBucketCount; ++i) {
    const auto count = static_cast<double>(buckets.counts[i]);
    if (i > 0) least += count * kCallDurationBoundsSeconds[i - 1];
    most += i < kCallDurationBoundsSeconds.size()
                ? count * kCallDurationBoundsSeconds[i]
                : (count > 0 ? std::numeric_limits<double>::infinity() : 0);
  }
  return {least, most};
}

// Why one histogram cannot be true on its own; empty when it can.
std::string buckets_problem(const DurationBuckets& buckets) {
  for (const int64_t count : buckets.counts) {
    if (count < 0) return "a bucket count is negative";
  }
  const double sum = buckets.sum_seconds;
  if (!std::isfinite(sum) || sum < 0) return "the sum is not a non-negative finite number";
  const auto [least, most] = sum_range(buckets);
  if (sum < least - kCallDurationSumToleranceSeconds ||
      sum > most + kCallDurationSumToleranceSeconds) {
    return "the sum does not fit its buckets";
  }
  return {};
}

}  // namespace

std::string call_durations_problem(const CallDurations& durations, int64_t calls_max,
                                   double seconds_max) {
  std::string problem = buckets_problem(durations);
  double sum = durations.sum_seconds;
  for (std::size_t i = 0; i < kCallErrorTypeCount && problem.empty(); ++i) {
    problem = buckets_problem(durations.failed[i]);
    if (!problem.empty())
      problem = "failed " + std::string(kCallErrorTypeNames[i]) + ": " + problem;
    sum += durations.failed[i].sum_seconds;
  }
  if (!problem.empty()) return problem;
  if (all_calls(durations) > calls_max) {
    return "counts " + std::to_string(all_calls(durations)) + " calls, more than the run's " +
           std::to_string(calls_max);
  }
  if (sum > seconds_max + kCallDurationSumToleranceSeconds) {
    return "the sum is longer than the run's " + std::to_string(seconds_max) + " seconds";
  }
  return {};
}

namespace {

json buckets_to_json(const DurationBuckets& buckets) {
  return {{"bucketCounts", buckets.counts},
          {"sumSeconds", std::round(buckets.sum_seconds * 1000) / 1000}};
}

std::optional<DurationBuckets> buckets_from_json(const json& value, std::string& problem) {
  const auto counts = value.is_object() ? value.find("bucketCounts") : value.end();
  const auto sum = value.is_object() ? value.find("sumSeconds") : value.end();
  if (counts == value.end() || !counts->is_array() || counts->size() != kCallDurationBucketCount) {
    problem = "bucketCounts is not an array of " + std::to_string(kCallDurationBucketCount);
    return std::nullopt;
  }
  DurationBuckets buckets;
  for (std::size_t i = 0; i < kCallDurationBucketCount; ++i) {
    const json& count = (*counts)[i];
    if (!count.is_number_integer() ||
        (count.is_number_unsigned() &&
         count.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) ||
        count.get<int64_t>() < 0) {
      problem = "a bucket count is not a non-negative integer";
      return std::nullopt;
    }
    buckets.counts[i] = count.get<int64_t>();
  }
  if (sum == value.end() || !sum->is_number() || !std::isfinite(sum->get<double>()) ||
      sum->get<double>() < 0) {
    problem = "sumSeconds is not a non-negative finite number";
    return std::nullopt;
  }
  buckets.sum_seconds = sum->get<double>();
  return buckets;
}

// `more` added into `into` (a name outside the vocabulary shares kOther).
void merge(DurationBuckets& into, const DurationBuckets& more) {
  for (std::size_t i = 0; i < kCallDurationBucketCount; ++i) {
    into.counts[i] = saturating_add(into.counts[i], more.counts[i]);
  }
  into.sum_seconds += more.sum_seconds;
}

}  // namespace

json call_durations_to_json(const CallDurations& durations) {
  json out = buckets_to_json(durations);
  json failed = json::object();
  for (std::size_t i = 0; i < kCallErrorTypeCount; ++i) {
    if (call_count(durations.failed[i]) == 0) continue;
    failed[std::string(kCallErrorTypeNames[i])] = buckets_to_json(durations.failed[i]);
  }
  if (!failed.empty()) out["failed"] = std::move(failed);
  return out;
}

std::optional<CallDurations> call_durations_from_json(const json& value, std::string& problem) {
  std::optional<DurationBuckets> answered = buckets_from_json(value, problem);
  if (!answered) return std::nullopt;
  CallDurations durations;
  static_cast<DurationBuckets&>(durations) = *answered;
  const auto failed = value.find("failed");
  if (failed == value.end()) return durations;
  if (!failed->is_object()) {
    problem = "failed is not an object";
    return std::nullopt;
  }
  for (const auto& [name, histogram] : failed->items()) {
    std::optional<DurationBuckets> buckets = buckets_from_json(histogram, problem);
    if (!buckets) {
      problem = "failed: " + problem;
      return std::nullopt;
    }
    merge(durations.failed_of(call_error_type_of(name)), *buckets);
  }
  return durations;
}

}  // namespace hb::api
