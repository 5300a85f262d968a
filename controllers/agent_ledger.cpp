#include "controllers/agent_ledger.h"

#include <algorithm>
#include <cmath>
#include <variant>

#include "controllers/agent_decision.h"
#include "controllers/provider_backoff.h"
#include "controllers/schedule/duration.h"
#include "controllers/schedule/spend.h"

namespace hb::controllers {

Spend spend_this_month(const std::optional<Spend>& stored, TimePoint now) {
  std::string period = schedule::spend_period(now);
  if (stored && stored->period == period) return *stored;
  return Spend{std::move(period), 0, 0, 0};
}

CountedLedger count_finished_runs(const AgentStatus& stored, std::vector<FinishedRun> uncounted,
                                  TimePoint now) {
  CountedLedger counted;
  if (uncounted.empty()) {
    counted.ledger.spend = spend_this_month(stored.spend, now);
    counted.ledger.last_heartbeat = stored.last_heartbeat_time;
    counted.ledger.paused_until = stored.paused_until;
    counted.ledger.idle_streak = stored.idle_streak.value_or(0);
    counted.ledger.provider_error_streak = stored.provider_error_streak.value_or(0);
    counted.recent_runs = stored.recent_runs != nullptr
                              ? stored.recent_runs
                              : std::make_shared<const std::vector<LedgerEntry>>();
    return counted;
  }
  LedgerInput in;
  in.now = now;
  in.finished = std::move(uncounted);
  in.spend = stored.spend.value_or(Spend{});
  if (stored.recent_runs != nullptr) in.recent = *stored.recent_runs;
  in.last_heartbeat = stored.last_heartbeat_time;
  in.paused_until = stored.paused_until;
  in.idle_streak = stored.idle_streak.value_or(0);
  in.provider_error_streak = stored.provider_error_streak.value_or(0);
  counted.ledger = apply_ledger(in);
  counted.recent_runs =
      std::make_shared<const std::vector<LedgerEntry>>(std::move(counted.ledger.recent));
  return counted;
}

int64_t spent_cents_this_month(const LedgerResult& ledger, TimePoint now) {
  return schedule::spend_in_current_period(ledger.spend.period,
                                           saturating_int64(std::floor(ledger.spend.cents)), now);
}

BackoffState backoff_state(const AgentSpec& spec, const AgentStatus& stored,
                           const LedgerResult& ledger) {
  BackoffState backoff;
  if (ledger.provider_error_streak > 0) backoff.provider_streak = ledger.provider_error_streak;
  const auto* interval =
      spec.schedule ? std::get_if<schedule::IntervalSchedule>(&*spec.schedule) : nullptr;
  if (interval == nullptr) return backoff;
  backoff.intervals = provider_backoff_intervals(ledger.provider_error_streak);
  if (spec.idle_backoff) {
    const bool same_spec = stored.observed_generation == spec.generation;
    backoff.idle_streak = same_spec ? ledger.idle_streak : 0;
    backoff.intervals =
        std::max(backoff.intervals,
                 backoff_intervals(*spec.idle_backoff, interval->seconds, *backoff.idle_streak));
  }
  if (spec.idle_backoff || backoff.intervals > 1) {
    backoff.effective_interval = schedule::format_duration(backoff.intervals * interval->seconds);
  }
  return backoff;
}

schedule::BlockResult agent_blocks(const AgentSpec& spec, const LedgerResult& ledger,
                                   const std::optional<BudgetHold>& hold,
                                   std::vector<schedule::PolicyBudget> policy_budgets,
                                   std::optional<schedule::ProviderHold> provider_hold,
                                   std::vector<schedule::Block> policy_refusals, TimePoint now) {
  schedule::BlockInput in;
  in.policy_refusals = std::move(policy_refusals);
  in.policy_budgets = std::move(policy_budgets);
  in.provider_hold = std::move(provider_hold);
  in.paused = spec.paused;
  in.paused_until = ledger.paused_until;
  in.monthly_budget_cents = spec.monthly_budget_cents;
  in.spent_cents_this_period = saturating_int64(std::floor(ledger.spend.cents));
  in.spend_period = ledger.spend.period;
  if (hold && hold->holds())
    in.budget_hold = schedule::HeldBudgetStop{hold->period, hold->budget_cents};
  return schedule::evaluate_blocks(in, now);
}

}  // namespace hb::controllers
