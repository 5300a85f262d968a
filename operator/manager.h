// Wires the operator: client, caches, work queue, reconciler workers, HTTP
// endpoints and leader election; runs until SIGTERM or lost leadership.
#pragma once

#include <atomic>

#include "operator/config.h"

namespace hb::operator_ {

inline constexpr int kExitOk = 0;
inline constexpr int kExitConfig = 2;
inline constexpr int kExitLostLeadership = 3;
inline constexpr int kExitStartup = 4;

// Returns the process exit code.
int run_manager(const Config& config, const std::atomic<bool>& stop);

}  // namespace hb::operator_
