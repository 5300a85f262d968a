// heartbeat-runner's exit codes (docs/runner.md). The operator maps them to
// the run's phase and reason; the result JSON says more.
#pragma once

#include "runner/stop_rules.h"

namespace hb::runner {

inline constexpr int kExitFinished = 0;           // the loop finished; any bound's stopReason
inline constexpr int kExitProviderError = 69;     // EX_UNAVAILABLE: the model provider failed
inline constexpr int kExitInternalError = 70;     // EX_SOFTWARE: a bug
inline constexpr int kExitToolsUnavailable = 75;  // EX_TEMPFAIL: the tools container is gone
inline constexpr int kExitConfigError = 78;       // EX_CONFIG: context document, flags, env
inline constexpr int kExitCancelled = 143;        // 128 + SIGTERM, after writing the result

constexpr int exit_code_for(StopReason reason) {
  switch (reason) {
    case StopReason::kProviderError:
      return kExitProviderError;
    case StopReason::kConfigError:
      return kExitConfigError;
    case StopReason::kInternalError:
      return kExitInternalError;
    case StopReason::kToolsUnavailable:
      return kExitToolsUnavailable;
    case StopReason::kCancelled:
      return kExitCancelled;
    default:
      return kExitFinished;
  }
}

}  // namespace hb::runner
