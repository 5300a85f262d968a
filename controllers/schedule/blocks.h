// What stops a new scheduled heartbeat: the board's pause, a HeartbeatPolicy's
// pause, the agent's own pause_heartbeats, or this month's budget.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "controllers/schedule/utc_time.h"

namespace hb::schedule {

// Condition and Event reasons (CamelCase, as Kubernetes expects).
inline constexpr std::string_view kReasonPaused = "Paused";
inline constexpr std::string_view kReasonPausedByAgent = "PausedByAgent";
// A HeartbeatPolicy that selects the agent has spec.paused: true (also the
// reason of a run it cancels with spec.cancelRunning).
inline constexpr std::string_view kReasonPolicyPaused = "PolicyPaused";
inline constexpr std::string_view kReasonBudgetExceeded = "BudgetExceeded";
// The BudgetExceeded condition's reason while a budget stop waits for a person.
inline constexpr std::string_view kReasonAwaitingApproval = "AwaitingApproval";
// The BudgetExceeded condition's reason when a HeartbeatPolicy's team budget stops it.
inline constexpr std::string_view kReasonPolicyBudgetExceeded = "PolicyBudgetExceeded";
// The BudgetExceeded condition's reason when spec.budget.dailyCents stops
// it (the Agent's own, or a HeartbeatPolicy's team day).
inline constexpr std::string_view kReasonDailyBudgetExceeded = "DailyBudgetExceeded";
inline constexpr std::string_view kReasonPolicyDailyBudgetExceeded = "PolicyDailyBudgetExceeded";
// The model provider's quota is spent for the agent's endpoint and API key.
inline constexpr std::string_view kReasonProviderThrottled = "ProviderThrottled";

// A provider quota hold over the agent: a run of an agent with the same
// endpoint and API-key Secret ended with stopReason provider_quota.
struct ProviderHold {
  TimePoint until{};
  std::string message;  // what is held and why (names the endpoint, Secret and run)
};

// A budget stop that waits for a person (status.budgetHold while it holds).
struct HeldBudgetStop {
  std::string period;  // the month whose budget was spent
  int64_t budget_cents = 0;
};

// A HeartbeatPolicy over the agent: its team budget (what the agents it
// selects spent in `period` together) and its kill switch.
struct PolicyBudget {
  std::string policy;        // its name (same namespace as the agent)
  int64_t budget_cents = 0;  // <= 0: no team budget
  int64_t spent_cents = 0;
  std::string period;           // "YYYY-MM"; spend of an earlier month counts as 0
  std::string ns = {};          // its namespace (the agent's), for messages
  bool paused = false;          // spec.paused: no run of the agent starts
  bool cancel_running = false;  // spec.cancelRunning (with paused): runs in flight are cancelled
  // spec.onExceeded: Finish: runs in flight finish once the team budget is
  // spent (else they are cancelled as by a spent agent budget).
  bool finish_on_exceeded = false;
  // spec.budget.dailyCents (<= 0: none) and what its agents spent on `day`
  // (schedule::spend_day in the policy's zone), which ends at day_ends.
  int64_t daily_budget_cents = 0;
  int64_t spent_today_cents = 0;
  std::string day = {};
  TimePoint day_ends = {};
  // spent_cents and spent_today_cents unrounded: what money held ahead
  // subtracts (a whole cent is several calls of a small run).
  double exact_spent_cents = 0;
  double exact_spent_today_cents = 0;
};

// The first policy (by name) that pauses the agent; null: none.
const PolicyBudget* pausing_policy(const std::vector<PolicyBudget>& policies);
// The first policy (by name) that pauses the agent with spec.cancelRunning;
// null: runs in flight finish.
const PolicyBudget* cancelling_policy(const std::vector<PolicyBudget>& policies);
// The first policy (by name) whose team budget is spent in now's month or
// whose daily budget is spent today, and that cancels runs in flight
// (spec.onExceeded: Cancel); null: none.
const PolicyBudget* budget_stopping_policy(const std::vector<PolicyBudget>& policies,
                                           TimePoint now);
// "ns/name" of a policy (its name alone when the namespace is not known).
std::string policy_key(const PolicyBudget& policy);

struct Block {
  std::string reason;   // one of the kReason* values
  std::string message;  // for a person: why, and what lifts it
  // The condition's reason when it differs from `reason` (AwaitingApproval).
  std::string_view condition_reason = {};
};

struct BlockInput {
  bool paused = false;                    // spec.paused
  std::optional<TimePoint> paused_until;  // status.pausedUntil
  int64_t monthly_budget_cents = 0;       // spec.budget.monthlyCents; <= 0 = unlimited
  int64_t spent_cents_this_period = 0;    // status.spend.cents
  std::string spend_period;               // status.spend.period ("YYYY-MM")
  // spec.budget.dailyCents (<= 0: none), the agent's spend in its day and
  // when that day ends (the agent's time zone, schedule/spend_day.h).
  int64_t daily_budget_cents = 0;
  int64_t spent_cents_today = 0;
  TimePoint day_ends = {};
  std::optional<HeldBudgetStop> budget_hold;
  std::vector<PolicyBudget> policy_budgets;  // the policies that select the agent, by name
  std::optional<ProviderHold> provider_hold;
  // What a HeartbeatPolicy refuses to run (pricing.h policy_refusals): they
  // hold every run until a person changes the Agent or the policy.
  std::vector<Block> policy_refusals;
};

struct BlockResult {
  // In the order policy refusals, PolicyPaused, Paused, PausedByAgent, ProviderThrottled,
  // BudgetExceeded.
  std::vector<Block> blocks;
  // When the PausedByAgent block lifts; set only while it applies. Requeue then.
  std::optional<TimePoint> paused_until_lifts_at;
  // When the ProviderThrottled block lifts; set only while it applies.
  std::optional<TimePoint> provider_hold_lifts_at;
  // When the BudgetExceeded block lifts by itself (the next UTC month, or
  // the next day for a daily budget); never while a hold waits for a person.
  std::optional<TimePoint> budget_resets_at;

  // A block only a person lifts (a held budget stop, a policy's pause): no
  // time to wait for.
  bool until_a_person_acts = false;

  bool blocked() const { return !blocks.empty(); }
  bool has(std::string_view reason) const;
};

// A pausedUntil at or before now no longer blocks, so a clock that jumps past
// it lifts the pause and one that jumps back reinstates it: only now counts.
// Spend recorded for an earlier month counts as 0. A held budget stop
// blocks in any month until a person releases it (budget_hold.h). A spent
// team budget blocks (one block: the first policy by name) unless the
// agent's own budget already does; it lifts when the month turns. A paused
// policy blocks (one block: the first paused policy by name, ahead of the
// board pause: the hold the agent's author cannot lift is the one shown)
// until a person sets its spec.paused to false.
BlockResult evaluate_blocks(const BlockInput& input, TimePoint now);

}  // namespace hb::schedule
