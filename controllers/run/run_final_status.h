// A run's final status: the outcome observe_run decided, charged
// (run_cost.h) and rendered, with its Events. Pure.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "api/run_result.h"
#include "controllers/model/run_cost.h"
#include "controllers/run/run_status.h"

namespace hb::controllers {

// The reason a runner's exit code gives (docs: the runner's exit codes).
std::string reason_for_exit(int64_t exit_code, const std::string& terminated_reason);

// An outcome decided; finish_run charges it.
struct Final {
  RunPhase phase;
  std::string reason;
  std::string message;
  std::optional<int64_t> exit_code;
  std::optional<int64_t> signal;
  std::string pod_name;
  std::optional<TimePoint> finished_at;
  std::optional<api::RunResult> result;
};

Final make_final(RunPhase phase, std::string reason, std::string message,
                 std::string pod_name = "");

// `obs` ended with `f`: charged (usage out of bounds renames the reason), its
// final status built on the stored one, an Event for it.
RunObservation finish_run(RunObservation obs, Final f, const RunObservationInput& in,
                          TimePoint started, std::optional<TimePoint> lease_renew);

}  // namespace hb::controllers
