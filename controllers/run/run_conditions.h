// A HeartbeatRun's conditions, Job-like and derived from its phase, so every
// run status write carries them and `kubectl wait --for=condition=Finished
// hbr/NAME` works: Running says whether its Job runs now; Complete (Succeeded)
// or Failed (Failed, TimedOut, Cancelled) appears True once it has ended,
// with the run's reason and message; Finished is False until then and True
// for any final phase, with the phase as its reason. Pure.
#pragma once

#include <cstdint>

#include "controllers/model/json_util.h"
#include "controllers/schedule/utc_time.h"

namespace hb::controllers {

inline constexpr const char* kRunConditionRunning = "Running";
inline constexpr const char* kRunConditionComplete = "Complete";
inline constexpr const char* kRunConditionFailed = "Failed";
inline constexpr const char* kRunConditionFinished = "Finished";

// `status` with `conditions` and `observedGeneration` set for its phase.
// `stored` is the run's stored status (may be null): a condition whose
// status did not change keeps its lastTransitionTime.
Json with_run_conditions(Json status, const Json* stored, int64_t generation, TimePoint now);

}  // namespace hb::controllers
