// heartbeat-runner's exit codes (docs/runner.md): the runner exits with them,
// the operator maps them to the run's phase and reason.
#pragma once

#include "api/stop_reason.h"

namespace hb::api {

inline constexpr int kExitFinished = 0;           // the loop finished; any bound's stopReason
inline constexpr int kExitProviderError = 69;     // EX_UNAVAILABLE: the model provider failed
inline constexpr int kExitInternalError = 70;     // EX_SOFTWARE: a bug
inline constexpr int kExitToolsUnavailable = 75;  // EX_TEMPFAIL: the tools container is gone
inline constexpr int kExitConfigError = 78;       // EX_CONFIG: context document, flags, env
// A shell's code for a process ended by a signal is this plus the signal.
inline constexpr int kExitSignalBase = 128;
// 128 + SIGTERM, after writing the result: the code a SIGTERMed process has.
inline constexpr int kExitCancelled = kExitSignalBase + 15;

constexpr int exit_code_for(StopReason reason) {
  switch (reason) {
    case StopReason::kProviderError:
    case StopReason::kProviderQuota:
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

}  // namespace hb::api
