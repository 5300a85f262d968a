// Agent status as a typed value: parsed once per stored version (the view
// cache keeps it), compared field by field by the decision and rendered to
// JSON only when it must be written. Pure.
//
// The lists (conditions, recentRuns) are shared, immutable vectors, so a
// desired status that only moves times or the phase shares them with the
// stored one instead of copying every string.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "api/agent_types.h"
#include "controllers/model/json_util.h"
#include "controllers/model/spend_ledger.h"

namespace hb::controllers {

struct Condition {
  std::string type;
  std::string status;  // "True" | "False" | "Unknown"
  int64_t observed_generation = 0;
  std::string last_transition_time;  // kept verbatim while the status stays
  std::string reason;
  std::string message;
  bool operator==(const Condition&) const = default;
};

// The heartbeat.dev/invoke value the operator last made a run for. The
// annotation stays (Git may hold it); only a value other than this one
// asks for another run.
struct LastInvoke {
  std::string value;       // shown to people; cut at kLastInvokeValueBytesMax
  std::string value_hash;  // long_hash of the whole value: what is compared
  std::string run;         // the run made for it
  bool operator==(const LastInvoke&) const = default;
};
inline constexpr std::size_t kLastInvokeValueBytesMax = 256;

// The last scheduled slot skipped without a run because the heartbeat
// prompt was empty or missing; cleared once the prompt is there again.
struct SkippedHeartbeat {
  TimePoint slot{};
  std::string reason;  // kReasonPromptEmpty | kReasonPromptNotFound
  std::string message;
  bool operator==(const SkippedHeartbeat&) const = default;
};

// A stop by the monthly budget that waits for a person (spec.budget.resume:
// Manual). It outlives the month: only a budget raised above the one that
// stopped the agent, or a heartbeat.dev/resume value other than the one it
// had then, releases it. A released hold stays for the rest of its month so
// the same stop is not held again (budget_hold.h).
struct BudgetHold {
  std::string period;        // "YYYY-MM" whose budget was spent
  int64_t budget_cents = 0;  // spec.budget.monthlyCents then
  TimePoint since{};
  std::string resume_hash;  // long_hash of heartbeat.dev/resume then; "" when absent
  std::optional<TimePoint> released_at;
  std::string released_by;  // kBudgetReleasedBy*; empty while it holds
  bool holds() const { return !released_at.has_value(); }
  bool operator==(const BudgetHold&) const = default;
};

using Conditions = std::shared_ptr<const std::vector<Condition>>;
using RecentRuns = std::shared_ptr<const std::vector<LedgerEntry>>;

struct AgentStatus {
  std::optional<int64_t> observed_generation;
  Conditions conditions;  // null: absent
  std::string phase;      // empty: absent
  std::optional<TimePoint> last_schedule_time;
  std::optional<TimePoint> last_heartbeat_time;
  std::optional<TimePoint> next_heartbeat_time;
  std::optional<TimePoint> paused_until;
  std::string active_run;  // empty: absent
  std::optional<Spend> spend;
  // The agent's spend on its current day, while more than 0 (agent_ledger.h
  // spend_today).
  std::optional<DaySpend> spend_today;
  // The agent type whose capability table status.capabilities shows; null
  // when absent or when it shows no table of ours.
  std::optional<api::AgentType> capabilities;
  RecentRuns recent_runs;  // null: absent
  std::optional<LastInvoke> last_invoke;
  std::optional<SkippedHeartbeat> last_skipped;
  std::optional<BudgetHold> budget_hold;
  // Idle backoff (idle_backoff.h), shown while spec.heartbeat.idleBackoff is
  // set: scheduled runs in a row that ended idle; and the gap idle and
  // provider backoff make between interval slots ("10m", "20m", ...).
  std::optional<int64_t> idle_streak;
  // Runs in a row that failed on the model provider (provider_backoff.h); absent at 0.
  std::optional<int64_t> provider_error_streak;
  std::string effective_interval;  // empty: absent
};

bool same_conditions(const Conditions& a, const Conditions& b);
bool same_recent_runs(const RecentRuns& a, const RecentRuns& b);
bool operator==(const AgentStatus& a, const AgentStatus& b);

struct ParsedAgentStatus {
  AgentStatus status;
  // Rendering `status` gives back exactly the stored JSON (==). When not
  // (a field of the wrong type, an older layout), the next decision rewrites it.
  bool canonical = false;
};

ParsedAgentStatus parse_agent_status(const Json* stored);
// A status.conditions list (of any kind of ours); null when absent or not a list.
Conditions parse_conditions(const Json* list);
// status.capabilities as the CRD names them: the type's row of the table.
const Json& capabilities_json(api::AgentType type);
Json to_json(const AgentStatus& status);
Json to_json(const Condition& condition);
Json to_json(const BudgetHold& hold);

}  // namespace hb::controllers
