// The durable ledger: an agent's spend per UTC month and per day (in the
// agent's and each policy's time zone, schedule/spend_day.h), kept by namespace and
// name (not by the Agent's UID) in a ConfigMap in the operator's own
// namespace, where an agent's author can neither write nor delete it. It is
// where a run's charge is committed: a run is counted when its name and
// charge land in the record (a write conditional on the record's
// resourceVersion), and only then is the run marked costRecorded. The
// Agent's status.spend shows the record's figure; deleting and re-applying
// the Agent starts again from it. Each charge is attributed to the
// policies that admitted the run (stamped on it at start) and to those
// selecting the agent when it is counted, so relabelling moves nothing
// already spent: a team's spend is the sum of its records' attributions
// (docs/operator.md, "The ledger"). Pure.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "controllers/model/json_util.h"
#include "controllers/model/spend_ledger.h"

namespace date {
class time_zone;
}

namespace hb::controllers {

// Labels and keys of a ledger ConfigMap.
inline constexpr const char* kLabelLedger = "heartbeat.dev/ledger";  // value kLedgerKindAgent
inline constexpr const char* kLedgerKindAgent = "agent";
inline constexpr const char* kLabelLedgerNamespace = "heartbeat.dev/agent-namespace";
inline constexpr const char* kLedgerDataKey = "ledger.json";
inline constexpr const char* kLedgerNamePrefix = "hb-ledger-";
// Months kept: this one and the one before (a run that finished last month
// and is counted now is added to last month).
inline constexpr std::size_t kLedgerPeriodsKept = 2;
// Runs charged whose mark is not yet seen. An agent has at most one such
// run in the steady state; the bound only keeps a record from growing
// without end if marks keep failing.
inline constexpr std::size_t kLedgerCountedMax = 64;

int64_t to_micro_cents(double cents);  // rounded, saturated

struct PeriodSpend {
  int64_t micro_cents = 0;
  int64_t input_tokens = 0;
  int64_t output_tokens = 0;
  // The part charged under each policy (by policy name, in the agent's namespace).
  std::map<std::string, int64_t> policy_micro_cents;
  bool operator==(const PeriodSpend&) const = default;
};

struct CountedCharge {  // a run charged whose mark the record has not seen
  std::string run;
  int64_t micro_cents = 0;
  std::string period;  // the month it was added to
  bool operator==(const CountedCharge&) const = default;
};

struct LedgerRecord {
  std::string ns;
  std::string agent;
  std::map<std::string, PeriodSpend> periods;  // by "YYYY-MM"
  // By day key ("YYYY-MM-DD@zone"): micro_cents and tokens in the agent's
  // zone's day, policy_micro_cents in each policy's zone's day.
  std::map<std::string, PeriodSpend> days = {};
  std::vector<CountedCharge> counted = {};  // oldest first
  bool operator==(const LedgerRecord&) const = default;
};

struct LedgerCharge {  // one run to count
  std::string run;
  double cost_cents = 0;
  int64_t input_tokens = 0;
  int64_t output_tokens = 0;
  TimePoint finished_at{};
  std::vector<std::string> policies;  // charged under each
  // When the run was admitted (its status.startedAt, by the operator's
  // clock, which also chose the room it was admitted from); nullopt: it
  // never started, and finished_at stands in.
  std::optional<TimePoint> admitted_at = {};
  // The day keys charged_at falls in: the agent's, and each policy's
  // (by name; one not named: the agent's). Empty: the UTC day.
  std::string day = {};
  std::map<std::string, std::string> policy_days = {};
  // Not part of the record: for the GenAI duration metric, observed with the charge.
  std::optional<api::CallDurations> call_durations = {};
};

// The instant whose month and day a charge belongs to: when its run was
// admitted, so a charge lands in the room that admitted it whatever the
// clocks that stamped its finish.
TimePoint charged_at(const LedgerCharge& charge);

// Sets each charge's day keys (schedule::spend_day of charged_at): the
// agent's in `agent_zone`, each policy's in `policy_zone(name)` (nullptr: UTC).
void stamp_days(
    std::vector<LedgerCharge>& charges, const date::time_zone* agent_zone,
    const std::function<const date::time_zone*(const std::string& policy)>& policy_zone);

// "hb-ledger-<namespace>-<16 hex digits of a stable hash of namespace/name>":
// a ConfigMap name for any Agent name, fixed for ever.
std::string ledger_object_name(const std::string& ns, const std::string& agent);

// Adds each charge to the month and the days its run finished in, once: a
// run already in `counted` is charged only what its figure has grown by
// (never less), the month's part into the month it was first added to.
// Months older than kLedgerPeriodsKept before `now` are dropped, and days
// schedule::day_expired says are.
LedgerRecord charge_runs(LedgerRecord record, const std::vector<LedgerCharge>& charges,
                         TimePoint now);

// The charges of runs `record` has not counted: those charge_runs adds for
// the first time. The GenAI metrics observe a run only then, so a charge
// repeated after a crash (its mark lost, the record already counting it)
// is not observed again by a process that never saw the first.
std::vector<LedgerCharge> first_charges(const LedgerRecord& record,
                                        const std::vector<LedgerCharge>& charges);

// Drops the counted runs `still_unmarked` says are marked or gone.
LedgerRecord forget_marked(LedgerRecord record,
                           const std::function<bool(const std::string& run)>& still_unmarked);

// The record's figure for `period` as the Agent's status shows it.
Spend spend_in(const LedgerRecord& record, const std::string& period);
// The agent's spend on a day (its key, schedule::spend_day), in cents.
double spend_on_day(const LedgerRecord& record, const std::string& day);
// The zone of the newest day the record charged the agent in (its
// spec.heartbeat.timeZone then): a run charged after its Agent is gone
// counts in the day the Agent counted in. Empty: none recorded (UTC).
std::string agent_zone_in(const LedgerRecord& record);
// The runs the record charged and has not seen marked, as ledger entries
// (name and charge) that count_finished_runs treats as counted.
std::vector<LedgerEntry> counted_entries(const LedgerRecord& record);

// The ConfigMap (in the operator's namespace `home`) that keeps `record`;
// `resource_version` non-empty makes a replace conditional.
Json ledger_configmap(const LedgerRecord& record, const std::string& home,
                      const std::string& resource_version);
// The record a ledger ConfigMap keeps; an error names what is wrong (the
// operator alone writes them, so that is a bug or a person's edit).
struct ParsedLedger {
  std::optional<LedgerRecord> record;
  std::string error;
};
ParsedLedger parse_ledger_configmap(const Json& configmap);

}  // namespace hb::controllers
