#include "controllers/model/spend_ledger.h"

#include <algorithm>
#include <cmath>

#include "api/hb_assert.h"
#include "api/saturating.h"
#include "controllers/model/idle_backoff.h"
#include "controllers/model/provider_backoff.h"
#include "controllers/model/run_cost.h"
#include "controllers/schedule/spend.h"

namespace hb::controllers {

double round_to_spend_resolution(double cents) {
  // Divided by an exact power of ten (not multiplied by 1e-6, which is not
  // exact in binary), so 0.1 is stored as 0.1, not 0.09999999999999999.
  return std::round(cents * kSpendUnitsPerCent) / kSpendUnitsPerCent;
}

LedgerResult apply_ledger(const LedgerInput& in) {
  LedgerResult out;
  const std::string period = schedule::spend_period(in.now);
  out.spend = in.spend;
  if (out.spend.period != period) out.spend = Spend{period, 0, 0, 0};
  out.recent = in.recent;
  out.last_heartbeat = in.last_heartbeat;
  out.paused_until = in.paused_until;
  out.idle_streak = in.idle_streak;
  out.provider_error_streak = in.provider_error_streak;

  std::vector<FinishedRun> finished = in.finished;
  std::sort(finished.begin(), finished.end(), [](const FinishedRun& a, const FinishedRun& b) {
    return a.finished_at != b.finished_at ? a.finished_at < b.finished_at : a.name < b.name;
  });
  for (const FinishedRun& run : finished) {
    auto already = std::find_if(out.recent.begin(), out.recent.end(),
                                [&](const LedgerEntry& e) { return e.name == run.name; });
    out.mark.push_back(run.name);
    if (already != out.recent.end()) {
      // Counted in a pass whose mark write failed, and observed higher now
      // (the result arrived after a beat's figure was counted): charge the
      // difference and record the new figure in the same write. Never lower.
      const double more = run.usage.cost_cents - already->cost_cents;
      if (more >= kSpendCentsResolution) {
        if (schedule::spend_period(run.admitted_at.value_or(run.finished_at)) == period) {
          out.spend.cents = round_to_spend_resolution(out.spend.cents + more);
        }
        already->cost_cents = run.usage.cost_cents;
        out.counted.push_back(run.name);
        out.raised.push_back(run.name);
      }
      continue;
    }
    if (schedule::spend_period(run.admitted_at.value_or(run.finished_at)) == period) {
      out.spend.cents = round_to_spend_resolution(out.spend.cents + run.usage.cost_cents);
      // Saturating: a month of runs can never wrap the totals negative.
      out.spend.input_tokens = saturating_add(out.spend.input_tokens, run.usage.input_tokens);
      out.spend.output_tokens = saturating_add(out.spend.output_tokens, run.usage.output_tokens);
    }
    out.recent.insert(out.recent.begin(),
                      LedgerEntry{run.name, std::string(to_string(run.phase)), run.exit_code,
                                  run.usage.cost_cents, run.finished_at});
    out.counted.push_back(run.name);
    apply_run_effects(out, run);
  }
  if (out.recent.size() > kRecentRunsMax) out.recent.resize(kRecentRunsMax);
  HB_ASSERT(out.counted.size() <= out.mark.size());
  HB_ASSERT(out.raised.size() <= out.counted.size());
  HB_ASSERT(out.recent.size() <= kRecentRunsMax);
  return out;
}

void apply_run_effects(LedgerResult& out, const FinishedRun& run) {
  out.idle_streak = next_idle_streak(out.idle_streak, run.source, run.phase, run.idle);
  out.provider_error_streak =
      next_provider_error_streak(out.provider_error_streak, run.phase, run.reason);
  if (!out.last_heartbeat || run.finished_at > *out.last_heartbeat) {
    out.last_heartbeat = run.finished_at;
  }
  if (run.pause_until && (!out.paused_until || *run.pause_until > *out.paused_until)) {
    out.paused_until = run.pause_until;
  }
  HB_ASSERT_MSG(*out.last_heartbeat >= run.finished_at,
                "the last heartbeat is never earlier than a run counted");
  HB_ASSERT_MSG(!run.pause_until || *out.paused_until >= *run.pause_until,
                "a pause a run asked for is never shortened by the ledger");
}

double charged_cents(const std::vector<LedgerEntry>& recent, const std::string& run,
                     double observed_cents) {
  for (const LedgerEntry& e : recent) {
    if (e.name == run) return e.cost_cents;
  }
  return observed_cents;
}

Spend agent_spend(const Json& agent) {
  const Json* status = find_path(agent, "status");
  return status != nullptr ? spend_from_status(*status) : Spend{};
}

Spend spend_from_status(const Json& status) {
  Spend s;
  s.period = string_at(status, "spend/period");
  s.cents = number_at(status, "spend/cents").value_or(0);
  s.input_tokens = int_at(status, "spend/inputTokens").value_or(0);
  s.output_tokens = int_at(status, "spend/outputTokens").value_or(0);
  return s;
}

std::vector<LedgerEntry> recent_from_status(const Json& status) {
  std::vector<LedgerEntry> out;
  const Json* items = find_path(status, "recentRuns");
  if (items == nullptr || !items->is_array()) return out;
  for (const Json& item : *items) {
    out.push_back(LedgerEntry{string_at(item, "name"), string_at(item, "phase"),
                              int_at(item, "exitCode"), number_at(item, "costCents").value_or(0),
                              time_at(item, "finishedAt")});
  }
  return out;
}

Json to_json(const Spend& spend) {
  return {{"period", spend.period},
          {"cents", spend.cents},
          {"inputTokens", spend.input_tokens},
          {"outputTokens", spend.output_tokens}};
}

Json to_json(const DaySpend& spend) {
  Json out = Json::object();
  out.emplace("day", spend.day);
  out.emplace("timeZone", spend.time_zone);
  out.emplace("cents", round_to_spend_resolution(spend.cents));
  return out;
}

DaySpend day_spend_from_json(const Json& spend_today) {
  return {string_at(spend_today, "day"), string_at(spend_today, "timeZone"),
          number_at(spend_today, "cents").value_or(0)};
}

Json to_json(const std::vector<LedgerEntry>& recent) {
  Json out = Json::array();
  for (const LedgerEntry& e : recent) {
    Json item = {{"name", e.name}, {"phase", e.phase}, {"costCents", e.cost_cents}};
    if (e.exit_code) item["exitCode"] = *e.exit_code;
    if (e.finished_at) item["finishedAt"] = schedule::format_rfc3339(*e.finished_at);
    out.push_back(std::move(item));
  }
  return out;
}

}  // namespace hb::controllers
