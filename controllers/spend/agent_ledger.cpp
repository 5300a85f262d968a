#include "controllers/spend/agent_ledger.h"

#include <algorithm>
#include <cmath>
#include <variant>

#include "api/hb_assert.h"
#include "controllers/model/provider_backoff.h"
#include "controllers/schedule/duration.h"
#include "controllers/schedule/spend.h"
#include "controllers/schedule/spend_day.h"

namespace hb::controllers {

Spend spend_this_month(const std::optional<Spend>& stored, TimePoint now) {
  std::string period = schedule::spend_period(now);
  if (stored && stored->period == period) return *stored;
  HB_ASSERT_MSG(!period.empty(), "every time falls in a period");
  return Spend{std::move(period), 0, 0, 0};
}

namespace {

// The runs the record charged that recentRuns does not list (the agent
// write after the record's did not land, or the Agent was made again),
// put at its head: apply_ledger treats them as counted, so only their
// marks are left. Their names go to `behind`: the Agent status read does
// not show them counted, so their other effects (a pause they asked for)
// are applied again.
std::vector<LedgerEntry> with_record_counted(std::vector<LedgerEntry> recent,
                                             const LedgerRecord* record,
                                             const std::vector<FinishedRun>& finished,
                                             std::vector<const FinishedRun*>& behind) {
  if (record == nullptr) return recent;
  const std::size_t listed_before = recent.size();
  for (LedgerEntry& entry : counted_entries(*record)) {
    const bool listed = std::any_of(recent.begin(), recent.end(),
                                    [&](const LedgerEntry& e) { return e.name == entry.name; });
    const auto run = std::find_if(finished.begin(), finished.end(),
                                  [&](const FinishedRun& r) { return r.name == entry.name; });
    if (listed || run == finished.end()) continue;
    entry.phase = std::string(to_string(run->phase));
    entry.exit_code = run->exit_code;
    entry.finished_at = run->finished_at;
    recent.insert(recent.begin(), std::move(entry));
    behind.push_back(&*run);
  }
  HB_ASSERT_MSG(recent.size() - listed_before == behind.size() && behind.size() <= finished.size(),
                "each run put at the head is one finished run, once");
  return recent;
}

std::vector<LedgerCharge> charges_of(const std::vector<FinishedRun>& runs,
                                     const std::vector<std::string>& counted) {
  std::vector<LedgerCharge> charges;
  for (const std::string& name : counted) {
    const auto run = std::find_if(runs.begin(), runs.end(),
                                  [&](const FinishedRun& r) { return r.name == name; });
    if (run == runs.end()) continue;
    LedgerCharge charge{
        run->name,        run->usage.cost_cents, run->usage.input_tokens, run->usage.output_tokens,
        run->finished_at, run->policies};
    charge.admitted_at = run->admitted_at;
    charge.call_durations = run->call_durations;
    charges.push_back(std::move(charge));
  }
  HB_ASSERT_MSG(charges.size() <= counted.size() && charges.size() <= runs.size(),
                "a charge is one counted, finished run");
  return charges;
}

}  // namespace

CountedLedger count_finished_runs(const AgentStatus& stored, std::vector<FinishedRun> uncounted,
                                  TimePoint now, const LedgerRecord* record) {
  CountedLedger counted;
  const std::optional<Spend> spend =
      record != nullptr ? std::optional(spend_in(*record, schedule::spend_period(now)))
                        : stored.spend;
  if (uncounted.empty()) {
    counted.ledger.spend = spend_this_month(spend, now);
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
  in.finished = uncounted;
  in.spend = spend.value_or(Spend{});
  std::vector<const FinishedRun*> behind;
  in.recent = with_record_counted(
      stored.recent_runs != nullptr ? *stored.recent_runs : std::vector<LedgerEntry>{}, record,
      uncounted, behind);
  in.last_heartbeat = stored.last_heartbeat_time;
  in.paused_until = stored.paused_until;
  in.idle_streak = stored.idle_streak.value_or(0);
  in.provider_error_streak = stored.provider_error_streak.value_or(0);
  counted.ledger = apply_ledger(in);
  for (const FinishedRun* run : behind) apply_run_effects(counted.ledger, *run);
  counted.charges = charges_of(uncounted, counted.ledger.counted);
  HB_ASSERT_MSG(counted.charges.size() <= counted.ledger.counted.size(),
                "a run is charged only when the ledger counts it");
  counted.recent_runs =
      std::make_shared<const std::vector<LedgerEntry>>(std::move(counted.ledger.recent));
  return counted;
}

LedgerRecord record_from_status(const std::string& ns, const std::string& agent,
                                const AgentStatus& stored, TimePoint now) {
  LedgerRecord record;
  record.ns = ns;
  record.agent = agent;
  const Spend spend = spend_this_month(stored.spend, now);
  PeriodSpend& period = record.periods[spend.period];
  period.micro_cents = to_micro_cents(spend.cents);
  period.input_tokens = spend.input_tokens;
  period.output_tokens = spend.output_tokens;
  if (stored.recent_runs != nullptr) {
    for (const LedgerEntry& e : *stored.recent_runs) {
      const std::string month =
          e.finished_at ? schedule::spend_period(*e.finished_at) : spend.period;
      record.counted.push_back({e.name, to_micro_cents(e.cost_cents), month});
    }
  }
  HB_ASSERT_MSG(record.periods.size() == 1, "a record made from a status knows one month");
  return record;
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
  HB_ASSERT_MSG(backoff.intervals >= 1, "backing off never beats faster than the interval");
  if (spec.idle_backoff || backoff.intervals > 1) {
    backoff.effective_interval = schedule::format_duration(backoff.intervals * interval->seconds);
  }
  return backoff;
}

DaySpend spend_today(const AgentSpec& spec, const LedgerRecord* record,
                     std::vector<LedgerCharge> charges, TimePoint now) {
  const std::string today = schedule::spend_day(now, spec.time_zone);
  DaySpend out{std::string(schedule::day_of_key(today)), std::string(schedule::zone_of_key(today))};
  if (charges.empty()) {
    out.cents = record == nullptr ? 0 : spend_on_day(*record, today);
  } else {
    stamp_days(charges, spec.time_zone, [](const std::string&) { return nullptr; });
    const LedgerRecord charged =
        charge_runs(record != nullptr ? *record : LedgerRecord{}, charges, now);
    out.cents = spend_on_day(charged, today);
  }
  out.cents = round_to_spend_resolution(out.cents);
  HB_ASSERT(out.cents >= 0);
  return out;
}

int64_t spent_cents_today(const AgentSpec& spec, const LedgerRecord* record,
                          std::vector<LedgerCharge> charges, TimePoint now) {
  if (spec.daily_budget_cents <= 0) return 0;  // no zone lookup where no day limits
  return limited_cents_today(spec, spend_today(spec, record, std::move(charges), now));
}

std::optional<DaySpend> spend_today_if_needed(const AgentSpec& spec, const AgentStatus& stored,
                                              const LedgerRecord* record,
                                              const std::vector<LedgerCharge>& charges,
                                              TimePoint now) {
  const bool look = !charges.empty() || spec.daily_budget_cents > 0 || stored.spend_today;
  if (!look) return std::nullopt;
  if (record != nullptr || !stored.spend_today) return spend_today(spec, record, charges, now);
  // Without a durable record the status is the ledger: its figure stands for its day.
  LedgerRecord from_status;
  const DaySpend& shown = *stored.spend_today;
  from_status.days[schedule::day_key(shown.day, shown.time_zone)].micro_cents =
      to_micro_cents(shown.cents);
  return spend_today(spec, &from_status, charges, now);
}

int64_t limited_cents_today(const AgentSpec& spec, const std::optional<DaySpend>& today) {
  if (spec.daily_budget_cents <= 0 || !today) return 0;
  HB_ASSERT_MSG(today->cents >= 0, "spend_today rounds a non-negative sum");
  return saturating_int64(std::floor(today->cents));
}

std::optional<DaySpend> shown_spend_today(std::optional<DaySpend> today) {
  if (!today || today->cents <= 0) return std::nullopt;
  return today;
}

schedule::BlockResult agent_blocks(const AgentSpec& spec, const LedgerResult& ledger,
                                   int64_t spent_today, const std::optional<BudgetHold>& hold,
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
  if (spec.daily_budget_cents > 0) {  // a zone's day costs a lookup: only when it limits
    in.daily_budget_cents = spec.daily_budget_cents;
    in.spent_cents_today = spent_today;
    in.day_ends = schedule::start_of_next_day(now, spec.time_zone);
  }
  if (hold && hold->holds())
    in.budget_hold = schedule::HeldBudgetStop{hold->period, hold->budget_cents};
  schedule::BlockResult blocks = schedule::evaluate_blocks(in, now);
  HB_ASSERT_MSG(!in.budget_hold || blocks.until_a_person_acts,
                "a held budget stop waits for a person");
  return blocks;
}

}  // namespace hb::controllers
