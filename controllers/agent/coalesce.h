// Callback wakeups that arrive while one is still queued fold into it: the
// oldest queued callback run stays and runs once; each later one ends
// Cancelled with reason Coalesced, its reason recorded on the kept run's
// status.coalesced. Decided in the leader's reconcile, so it holds across
// replicas and restarts (the wakeup endpoint only creates runs).
#pragma once

#include <string>
#include <vector>

#include "controllers/model/json_util.h"
#include "controllers/run/run_status.h"

namespace hb::controllers {

inline constexpr const char* kReasonCoalesced = "Coalesced";
inline constexpr std::size_t kCoalescedRunsListedMax = 20;

struct Coalescing {
  std::string run;     // the later callback run, to end Cancelled/Coalesced
  std::string into;    // the queued callback run it folds into
  std::string reason;  // its spec.triggerDetail, kept on `into`
};

// `queued`: the agent's Queued runs, oldest first. Only callback runs that
// were never started fold; the first of them is kept.
std::vector<Coalescing> coalesce_callbacks(const std::vector<const RunObservation*>& queued);

// The kept run's status.coalesced after folding `folded` into it: a count
// and the last kCoalescedRunsListedMax {run, reason}. A run already listed
// is not counted again (a pass repeated after a crash).
Json coalesced_record(const Json& stored_status, const std::vector<Coalescing>& folded);

// The final status of a folded run: Cancelled/Coalesced, no cost, counted.
Json coalesced_final_status(const Json& stored_status, const std::string& into, TimePoint now);

}  // namespace hb::controllers
