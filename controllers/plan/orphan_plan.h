// What to do with the runs of an Agent that is gone (deleted, or an
// earlier Agent of the same name): a pure function of the runs, how each
// was observed (observe_run with agent_missing), the name's ledger record,
// --run-retention and now. The shell reads, calls plan_orphans and performs
// the steps in order, one API call each, stopping at the first failure.
//
// The order keeps it crash-safe (ledger_record.h):
//   1. delete the Jobs of runs being ended
//   2. charge every run that became final to the ledger, in one write
//   3. write each such run's final status, costRecorded and the cost the
//      ledger kept
//   4. delete the settled runs past retention
// A crash between 2 and 3 leaves the runs unmarked: the next pass charges
// them again, which the ledger counts once (a counted run is charged only
// what its figure grew by), and marks them. Marking first would let a crash
// lose the charge for good.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "controllers/model/json_util.h"
#include "controllers/run/run_status.h"
#include "controllers/spend/ledger_record.h"

namespace date {
class time_zone;
}

namespace hb::controllers {

struct OrphanRun {
  const Json* run = nullptr;  // required: as stored
  RunObservation observed;    // observe_run(agent_missing = true)
  bool has_job = false;       // its Job is in the cache
  // run_record.h admitting_policies: the policies its charge goes under.
  std::vector<std::string> admitting_policies;
};

enum class OrphanStepKind {
  kDeleteJob,     // `run`'s Job (Background propagation; NotFound is done)
  kChargeLedger,  // `charges` into `record`, the days in `agent_zone`
  kMarkFinal,     // `run`'s whole `status`, with its phase label
  kDeleteRun,     // `run`, past retention
};

struct OrphanStep {
  OrphanStepKind kind = OrphanStepKind::kDeleteJob;
  std::string run;                    // kDeleteJob, kMarkFinal, kDeleteRun
  Json status;                        // kMarkFinal
  LedgerRecord record;                // kChargeLedger: as read
  std::vector<LedgerCharge> charges;  // kChargeLedger
  // kChargeLedger: the zone the name's Agent counted its days in (nullptr: UTC).
  const date::time_zone* agent_zone = nullptr;
};

struct OrphanPlanInput {
  const std::vector<OrphanRun>* runs = nullptr;  // required
  // The name's ledger record; nullptr when the operator keeps no ledger.
  const LedgerRecord* ledger = nullptr;
  std::chrono::seconds retention{0};  // zero keeps every run
  TimePoint now{};
};

struct OrphanPlan {
  std::vector<OrphanStep> steps;
  std::optional<TimePoint> next_retention_at;  // when the next kept run falls due
};

OrphanPlan plan_orphans(const OrphanPlanInput& input);

// True when some run became final: only then does the plan need the
// ledger record (the shell reads it no sooner).
bool orphans_need_ledger(const std::vector<OrphanRun>& runs);

}  // namespace hb::controllers
