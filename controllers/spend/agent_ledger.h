// The agent's spend as the Agent decision reads it: final runs counted into
// the ledger (spend_ledger.h) and the blocks that follow from it (board
// pause, pause_heartbeats, budget). Pure steps of decide_agent.
#pragma once

#include <optional>
#include <vector>

#include "controllers/model/agent_spec.h"
#include "controllers/model/agent_status.h"
#include "controllers/model/spend_ledger.h"
#include "controllers/schedule/blocks.h"
#include "controllers/spend/ledger_record.h"

namespace hb::controllers {

// The spend as of now's UTC month: an earlier month's counts as nothing.
Spend spend_this_month(const std::optional<Spend>& stored, TimePoint now);

struct CountedLedger {
  LedgerResult ledger;  // its `recent` is moved into `recent_runs`
  RecentRuns recent_runs;
  // What the durable ledger must record before anything else is written:
  // the runs counted or raised now, at the figure counted.
  std::vector<LedgerCharge> charges;
};

// Counts `uncounted` into the stored ledger. `record`: the agent's durable
// ledger (ledger_record.h; null when it has none yet): its month's figure
// is the spend counted from, and the runs it charged and has not seen
// marked count as counted. With nothing to count (the steady state) the
// stored ledger is rolled to this month and its recentRuns list shared
// rather than copied.
CountedLedger count_finished_runs(const AgentStatus& stored, std::vector<FinishedRun> uncounted,
                                  TimePoint now, const LedgerRecord* record = nullptr);

// A record for an agent that has none yet, from what its status counted:
// this month's spend and the runs in recentRuns (marked ones are forgotten
// at the record's first write).
LedgerRecord record_from_status(const std::string& ns, const std::string& agent,
                                const AgentStatus& stored, TimePoint now);

// The ledger's spend counted in this UTC month (older spend counts as 0).
int64_t spent_cents_this_month(const LedgerResult& ledger, TimePoint now);

// Idle and provider backoff as this pass sees them (idle_backoff.h,
// provider_backoff.h): the gap between interval slots is the longer of the
// two. A cron schedule keeps its rule (only the streaks are shown).
struct BackoffState {
  std::optional<int64_t> idle_streak;      // status.idleStreak, with idleBackoff
  std::optional<int64_t> provider_streak;  // status.providerErrorStreak, while > 0
  int64_t intervals = 1;                   // the next slot's gap after lastScheduleTime
  std::string effective_interval;          // status.effectiveInterval, while it says something
};

// The ledger's streaks; the idle streak is 0 in the pass that first sees a
// new spec generation (a spec change starts that count again).
BackoffState backoff_state(const AgentSpec& spec, const AgentStatus& stored,
                           const LedgerResult& ledger);

// The agent's spend on its current day in spec.heartbeat.timeZone: the
// durable record's, with `charges` (the runs counted now) added.
DaySpend spend_today(const AgentSpec& spec, const LedgerRecord* record,
                     std::vector<LedgerCharge> charges, TimePoint now);

// spend_today in whole cents where spec.budget.dailyCents limits it; 0 without one.
int64_t spent_cents_today(const AgentSpec& spec, const LedgerRecord* record,
                          std::vector<LedgerCharge> charges, TimePoint now);

// spend_today, looked up only when a run is counted, a day limits the agent
// or the status shows a figure (to roll it off when its day ends): most
// passes change no spend, and a zone's day costs a lookup. nullopt: not looked up.
std::optional<DaySpend> spend_today_if_needed(const AgentSpec& spec, const AgentStatus& stored,
                                              const LedgerRecord* record,
                                              const std::vector<LedgerCharge>& charges,
                                              TimePoint now);

// The day's whole cents against spec.budget.dailyCents (0 without one).
int64_t limited_cents_today(const AgentSpec& spec, const std::optional<DaySpend>& today);

// status.spendToday: shown while the day's spend is more than 0.
std::optional<DaySpend> shown_spend_today(std::optional<DaySpend> today);

// `hold`: status.budgetHold as this pass decided it (budget_hold.h);
// `spent_today`: spent_cents_today.
schedule::BlockResult agent_blocks(const AgentSpec& spec, const LedgerResult& ledger,
                                   int64_t spent_today, const std::optional<BudgetHold>& hold,
                                   std::vector<schedule::PolicyBudget> policy_budgets,
                                   std::optional<schedule::ProviderHold> provider_hold,
                                   std::vector<schedule::Block> policy_refusals, TimePoint now);

}  // namespace hb::controllers
