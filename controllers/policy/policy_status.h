// The status a HeartbeatPolicy (model/policy_spec.h) should show for what
// the shell counted over the Agents it selects (shell/policy_index.h keeps
// the counts). Pure.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "controllers/model/json_util.h"
#include "controllers/model/policy_spec.h"

namespace hb::controllers {

// Condition types of a policy (besides kstatus's Ready, Reconciling and
// Stalled, and Paused and BudgetExceeded).
inline constexpr const char* kConditionSelectorMatchesNothing = "SelectorMatchesNothing";

// What the shell counted over the Agents a policy selects.
struct PolicyTally {
  int64_t agents = 0;
  int64_t running_runs = 0;
  double spent_cents = 0;        // in `period`
  std::string period;            // "YYYY-MM" of now
  double spent_today_cents = 0;  // in `day`
  std::string day = {};          // schedule::spend_day of now in the policy's zone
};

// The status the policy should show; the shell writes it when it differs
// from `stored` (status as stored, null when absent). Conditions keep their
// lastTransitionTime while they hold.
Json desired_policy_status(const PolicySpec& policy, const Json* stored, const PolicyTally& tally,
                           TimePoint now);

}  // namespace hb::controllers
