#include "controllers/model/provider_backoff.h"

#include <algorithm>

namespace hb::controllers {

int64_t next_provider_error_streak(int64_t streak, RunPhase phase, std::string_view reason) {
  const bool provider_failed = phase == RunPhase::kFailed && reason == kReasonProviderError;
  return provider_failed ? std::min(streak + 1, kProviderErrorStreakMax) : 0;
}

int64_t provider_backoff_intervals(int64_t streak) {
  int64_t intervals = 1;
  for (int64_t i = 0; i < streak && intervals < kProviderBackoffIntervalsMax; ++i) intervals *= 2;
  return std::min(intervals, kProviderBackoffIntervalsMax);
}

}  // namespace hb::controllers
