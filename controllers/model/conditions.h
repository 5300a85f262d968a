// The condition types every kind of the operator's shows (kstatus's Ready,
// Reconciling and Stalled among them), and how a condition keeps its
// lastTransitionTime. Condition itself is in agent_status.h.
#pragma once

#include <cstdint>
#include <string_view>

#include "controllers/model/agent_status.h"

namespace hb::controllers {

// Condition types and reasons.
inline constexpr const char* kConditionReady = "Ready";
// kstatus's: work the operator has not finished / a problem that needs a person.
inline constexpr const char* kConditionReconciling = "Reconciling";
inline constexpr const char* kConditionStalled = "Stalled";
inline constexpr const char* kConditionPaused = "Paused";
inline constexpr const char* kConditionBudgetExceeded = "BudgetExceeded";
inline constexpr const char* kConditionSpecValid = "SpecValid";
// Only while (and once stored, after) a provider quota hold applies.
inline constexpr const char* kConditionProviderThrottled = "ProviderThrottled";

// Conditions: keep lastTransitionTime while the status stays the same.
Condition make_condition(const Conditions& existing, std::string_view type, bool status,
                         std::string_view reason, std::string_view message, int64_t generation,
                         TimePoint now);

}  // namespace hb::controllers
