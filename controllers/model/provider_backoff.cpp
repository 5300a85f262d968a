#include "controllers/model/provider_backoff.h"

#include <algorithm>
#include <bit>

#include "api/hb_assert.h"

namespace hb::controllers {

// The streak counts the failures it takes to double up to the cap, and
// doubling below the cap cannot overflow.
static_assert(kProviderBackoffIntervalsMax >= 1 && kProviderBackoffIntervalsMax <= int64_t{1}
                                                                                       << 62);
static_assert(kProviderErrorStreakMax >=
              std::bit_width(static_cast<uint64_t>(kProviderBackoffIntervalsMax)));

int64_t next_provider_error_streak(int64_t streak, RunPhase phase, std::string_view reason) {
  const bool provider_failed = phase == RunPhase::kFailed && reason == kReasonProviderError;
  const int64_t next = provider_failed ? std::min(streak + 1, kProviderErrorStreakMax) : 0;
  HB_ASSERT_MSG(next <= kProviderErrorStreakMax && (provider_failed || next == 0),
                "a provider error streak stops at its cap, and any other run ends it");
  return next;
}

int64_t provider_backoff_intervals(int64_t streak) {
  int64_t intervals = 1;
  for (int64_t i = 0; i < streak && intervals < kProviderBackoffIntervalsMax; ++i) intervals *= 2;
  const int64_t out = std::min(intervals, kProviderBackoffIntervalsMax);
  HB_ASSERT(out >= 1 && out <= kProviderBackoffIntervalsMax);
  return out;
}

}  // namespace hb::controllers
