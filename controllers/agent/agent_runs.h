// The agent's runs as the Agent decision reads them: which are counted,
// which wait, which starts, which are deleted. Pure steps of decide_agent.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "controllers/agent/coalesce.h"
#include "controllers/model/spend_ledger.h"
#include "controllers/run/run_status.h"
#include "controllers/schedule/blocks.h"

namespace hb::controllers {

struct RunsByState {
  std::vector<FinishedRun> uncounted;  // final, cost not recorded yet
  const RunObservation* running = nullptr;
  std::vector<const RunObservation*> queued;  // in the input's order
  // The stored lastScheduleTime, or a scheduler run's later slot (a status
  // write lost after the run was created).
  std::optional<TimePoint> last_scheduled;
};

RunsByState sort_runs_by_state(const std::vector<RunObservation>& runs,
                               std::optional<TimePoint> stored_last_schedule, TimePoint now);

struct RunQueue {
  std::vector<const RunObservation*> waiting;  // in request order; the first starts first
  std::vector<Coalescing> folded;              // later callbacks folded into an earlier one
};

// Orders the Queued runs by when they were asked for and folds later queued
// callbacks into the first: folded runs never start.
RunQueue order_queue(std::vector<const RunObservation*> queued);

// Why runs may not start now: `all` holds every run (empty when one may
// start); `scheduled` holds scheduler runs only (the agent's own
// pause_heartbeats: a manual or callback run still starts, docs/reference.md).
struct WaitReasons {
  std::string all;
  std::string scheduled;
};

// `agent_valid`: the spec is valid and the agent is not being deleted.
WaitReasons wait_reasons(bool agent_valid, const schedule::BlockResult& blocks,
                         const RunObservation* running);

struct StartPlan {
  std::optional<std::string> start_run;                // a run to start now
  std::optional<std::string> active;                   // the run going on after this pass
  std::map<std::string, std::string> queued_messages;  // Queued runs whose message changes
};

// Starts the first waiting run that nothing holds, else the slot's new run
// (`new_run`, null: none; a scheduler run); every other waiting run is told
// why it waits.
StartPlan plan_start(const WaitReasons& why, const RunObservation* running,
                     const std::vector<const RunObservation*>& waiting, const std::string* new_run);

// Finished runs with their cost recorded beyond historyLimits, oldest ones:
// Succeeded counts against historyLimits.succeeded, the other final phases
// against .failed.
std::vector<std::string> runs_beyond_history(const std::vector<RunObservation>& runs,
                                             int keep_succeeded, int keep_failed);

}  // namespace hb::controllers
