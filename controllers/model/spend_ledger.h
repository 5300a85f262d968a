// Exactly-once cost accounting. Pure.
//
// The agent's status.recentRuns is the ledger: a run's name is put there in
// the same status write (conditional on the agent's resourceVersion) that
// adds its cost to status.spend. Only after that write succeeded is the run
// marked costRecorded=true. So for a final run that is not marked:
//   - its name in recentRuns -> its cost is already in spend: only mark it;
//   - otherwise              -> add its cost and its name, in one write.
// A crash or a 409 between the two writes therefore never counts a run twice
// nor loses it. recentRuns is bounded (kRecentRunsMax); it can never drop an
// unmarked run because a new run of the agent only starts when every earlier
// one is final, and marks are written right after the ledger write (an
// unmarked run blocks counting more than kRecentRunsMax - 1 newer runs).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "api/call_durations.h"
#include "controllers/model/json_util.h"
#include "controllers/model/run_view.h"

namespace hb::controllers {

inline constexpr std::size_t kRecentRunsMax = 10;
// Spend is kept to a millionth of a cent, so binary floating-point noise from
// summing many runs (0.1 + 0.2) never shows in status nor builds up.
inline constexpr double kSpendUnitsPerCent = 1e6;  // a millionth of a cent
inline constexpr double kSpendCentsResolution = 1 / kSpendUnitsPerCent;

double round_to_spend_resolution(double cents);

struct Spend {
  std::string period;  // "YYYY-MM"
  double cents = 0;
  int64_t input_tokens = 0;
  int64_t output_tokens = 0;
  bool operator==(const Spend&) const = default;
};

// status.spendToday: the spend on one day (spend_day.h), in the zone the day
// is counted in.
struct DaySpend {
  std::string day;        // "YYYY-MM-DD"
  std::string time_zone;  // IANA name ("UTC" when unset)
  double cents = 0;
  bool operator==(const DaySpend&) const = default;
};

struct LedgerEntry {  // one item of status.recentRuns
  std::string name;
  std::string phase;
  std::optional<int64_t> exit_code;
  double cost_cents = 0;
  std::optional<TimePoint> finished_at;
  bool operator==(const LedgerEntry&) const = default;
};

struct FinishedRun {  // a final run whose costRecorded is not yet true
  std::string name;
  std::string source;  // scheduler | manual | callback
  bool idle = false;   // status.idle: a succeeded run that acted on nothing
  std::string reason;  // status.reason (ProviderError: provider_backoff.h)
  RunPhase phase = RunPhase::kSucceeded;
  std::optional<int64_t> exit_code;
  RunUsage usage;
  TimePoint finished_at{};
  // status.startedAt: when it was admitted, by the operator's clock. Its
  // spend belongs to that month (and day), whose room admitted it.
  std::optional<TimePoint> admitted_at;
  std::optional<TimePoint> pause_until;
  std::vector<std::string> policies;  // status.policies: those that admitted it
  // status.usage.modelCallDurations: believed when the run finished.
  std::optional<api::CallDurations> call_durations = {};
};

struct LedgerInput {
  Spend spend;
  std::vector<LedgerEntry> recent;  // newest first
  std::optional<TimePoint> last_heartbeat;
  std::optional<TimePoint> paused_until;
  std::vector<FinishedRun> finished;  // unmarked final runs, any order
  int64_t idle_streak = 0;            // status.idleStreak (idle_backoff.h)
  int64_t provider_error_streak = 0;  // status.providerErrorStreak (provider_backoff.h)
  TimePoint now{};
};

struct LedgerResult {
  Spend spend;  // rolled to the current UTC month, plus what was counted
  std::vector<LedgerEntry> recent;
  std::optional<TimePoint> last_heartbeat;
  std::optional<TimePoint> paused_until;
  // Moved by each newly counted run, in the order they finished.
  int64_t idle_streak = 0;
  int64_t provider_error_streak = 0;
  std::vector<std::string> counted;  // newly added to spend (need the agent write first)
  std::vector<std::string> mark;     // write costRecorded=true (after the agent write)
  // Counted before and charged more now: the charge is only right if the
  // run is still unmarked, which the caller must confirm against the API
  // server (a run view behind a mark that landed would charge it twice).
  std::vector<std::string> raised;
};

// Unmarked runs are counted oldest first. A run counted before (its name in
// recentRuns) whose observed cost has since grown is charged the difference
// (listed in `counted`, so the agent write comes first); it is never charged
// less than once counted. A run that finished in an earlier
// UTC month than now is recorded in recentRuns but not added to this month.
LedgerResult apply_ledger(const LedgerInput& input);

// What counting `run` does to the agent beyond its spend: the streaks, the
// last heartbeat, a pause the run asked for.
void apply_run_effects(LedgerResult& out, const FinishedRun& run);

// What a run was charged: its recentRuns entry's figure, else `observed_cents`.
// The mark write records this, so a run's costCents always equals what its
// agent's spend holds for it.
double charged_cents(const std::vector<LedgerEntry>& recent, const std::string& run,
                     double observed_cents);

Spend spend_from_status(const Json& agent_status);
// The Agent's status.spend; none when it has no status yet.
Spend agent_spend(const Json& agent);
std::vector<LedgerEntry> recent_from_status(const Json& agent_status);
Json to_json(const Spend& spend);
Json to_json(const DaySpend& spend);
DaySpend day_spend_from_json(const Json& spend_today);
Json to_json(const std::vector<LedgerEntry>& recent);
}  // namespace hb::controllers
