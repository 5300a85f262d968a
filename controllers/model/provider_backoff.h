// Provider backoff: while the model provider keeps failing (an outage, a 5xx
// after the runner's own retries), an agent on an interval waits 2, 4, then
// 8 intervals between heartbeats instead of failing every slot into the
// same wall. The streak is counted in the ledger with each run, like idle
// backoff's (idle_backoff.h); a run that reaches the model ends it. Pure.
#pragma once

#include <cstdint>

#include "controllers/model/run_view.h"

namespace hb::controllers {

// The run's reason for the runner's exit code 69 (api/exit_codes.h).
inline constexpr const char* kReasonProviderError = "ProviderError";
// The longest gap provider failures make: this many intervals.
inline constexpr int64_t kProviderBackoffIntervalsMax = 8;
inline constexpr int64_t kProviderErrorStreakMax = 1'000'000;

// The streak after one more counted run: one more when it failed on the
// provider, else 0 (whatever started it: any run that reached the model
// shows the provider is back).
int64_t next_provider_error_streak(int64_t streak, RunPhase phase, std::string_view reason);

// Intervals between slots for a streak: 1, then 2, 4, 8, 8...
int64_t provider_backoff_intervals(int64_t streak);

}  // namespace hb::controllers
