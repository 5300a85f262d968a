// The writes of one Agent reconcile, in the order that keeps them crash-safe:
// a pure function of the decision and the observations (plan_writes), and
// the loop that performs them through a writer, stopping at the first
// failure (perform_plan). The operator's writer talks to the API server
// (controllers/shell/agent_reconciler.cpp); the unit tests' writer changes
// objects in memory, so both run the same plan in the same order.
//
// The order (docs/operator.md):
//   1. delete Jobs of cancelled, stalled or overdue runs
//   2. create the slot's scheduler run (deterministic name; AlreadyExists = adopt),
//      the manual run an invoke annotation asks for, and the callback runs
//      of other agents a finished run @mentioned; a slot's run that starts
//      in this pass is not created here but in 3, after its Job
//   3. start the next queued run: per-agent objects once, context, Job
//   4. replace the agent status (conditional on resourceVersion): counts spend
//   5. write each counted run's final status with costRecorded=true (what the
//      ledger charged), then the coalesced runs
//   6. other run statuses (Queued messages), history deletes
// The start (3) comes after 4 and 5 instead when one of them writes the run
// being started. A pass that made a Job ends after the agent status that
// follows it (or at the Job when none does, or when that status counts no
// spend and the run started is the slot's own, created in this pass), with
// that write's Events (rest_left): the writes after it are decided again by
// a pass queued at once. A failed start does
// not stop the writes after it (the pass still fails); any other failure
// stops the pass.
// Events follow the write that makes them true (agent Events after 4, run
// Events after 5), so a later failure cannot lose a transition's Event.
// A failed pass is retried and re-derives everything from the caches.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "controllers/agent/agent_decision.h"
#include "controllers/model/event.h"
#include "controllers/model/json_util.h"
#include "controllers/run/run_status.h"
#include "kube/request_priority.h"

namespace hb::controllers {

enum class WriteOp {
  kDeleteJob,           // `run`'s Job (Background propagation; NotFound is done)
  kCreateRun,           // `request`: the slot's scheduler run
  kInvokeRun,           // `request`: the manual run a new invoke annotation value asks for
  kMentionRun,          // `mention`: a callback run for another Agent this one @mentioned
  kReplaceAgentStatus,  // `status`: the agent's whole status
  kRunStatus,           // `run`'s whole `status`; final ones also get their phase label
  kStartRun,            // `run`: prompt, per-agent objects, context, Job, Running status
  kStartSlotRun,        // `request`: the slot's run started Job first (run_after_job.h):
                        // its Job made, the run itself by the pass after
  kDeleteRun,           // `run`, beyond historyLimits
  kEvent,               // `event` (best effort: a failed Event write never stops the pass)
};

// Why a run status is written (the shell counts and logs by it).
enum class RunStatusPurpose {
  kNone,
  kCounted,        // final, its cost now in the agent's spend
  kCoalescedInto,  // a queued callback run records the wakeups folded into it
  kFolded,         // a later callback run ends Cancelled/Coalesced
  kChanged,        // anything else that changed (a Queued message, a Running run's times)
};

struct PlannedWrite {
  WriteOp op = WriteOp::kEvent;
  // Its place in the client's rate limiter (write_priority below).
  kube::RequestPriority priority{kube::RequestClass::kBookkeeping, 0};
  std::string run;                // the run's name, for the run writes
  Json status;                    // kReplaceAgentStatus, kRunStatus
  bool final_with_label = false;  // kRunStatus: also label the run with its phase
  RunStatusPurpose purpose = RunStatusPurpose::kNone;
  bool cost_mismatch = false;             // kCounted: the runner's cost differs from ours
  std::string folded_into;                // kFolded: the queued callback run it folded into
  std::optional<RunRequest> request;      // kCreateRun, kInvokeRun, kStartSlotRun
  std::optional<MentionRequest> mention;  // kMentionRun
  std::optional<Event> event;             // kEvent
};

struct WritePlanInput {
  const AgentDecision* decision = nullptr;                // required
  const std::vector<RunObservation>* observed = nullptr;  // required: one per run, in order
  const std::vector<Json>* runs = nullptr;  // required: the runs as stored, same order
  std::vector<bool> has_job;                // run i's Job is in the cache (empty: assume it is)
  bool routine_events = false;              // also write Events marked routine
  TimePoint now{};
};

std::vector<PlannedWrite> plan_writes(const WritePlanInput& input);

// Dispatch orders per slot: a start (its Job), then a run create.
inline constexpr int64_t kDispatchStages = 2;

// Which class a planned write queues in (issue 15): creating a run and
// starting it (its Job) are dispatch, ordered by slot; what ends or counts a
// run (a Job delete, a Running, final or folded run status, an agent status
// that counts spend) is lifecycle; the rest (an agent status that only moves
// times or conditions, a Queued message, history deletes, Events) is
// bookkeeping. `counts_spend`: the plan writes a counted run. A dispatch's
// order is its slot's seconds × kDispatchStages, + 1 for a run create.
kube::RequestPriority write_priority(const PlannedWrite& write, bool counts_spend,
                                     std::optional<TimePoint> slot, TimePoint now);

// What one write came to.
enum class WriteResult {
  kDone,
  kFailed,     // stop the pass (the writer keeps the error)
  kNameTaken,  // kCreateRun: the name is someone else's run; that run is not started
  kHeldBack,   // kStartRun: an object in the way held the run back; it stays Queued
  // kStartSlotRun: the run was made (Queued) but its Job was not; like a
  // failed kStartRun, the writes after it go on and the pass fails. A
  // kStartSlotRun that made neither returns kFailed: the pass stops, since
  // the agent status after it would record the slot as handled.
  kStartFailed,
};

// Performs writes; each call is one step of the plan.
class PlanWriter {
 public:
  virtual ~PlanWriter() = default;
  // Called before each write with its planned priority (the shell hands it
  // to the rate limiter).
  virtual void before(const PlannedWrite&) {}
  virtual WriteResult delete_job(const std::string& run) = 0;
  virtual WriteResult create_run(const RunRequest& request) = 0;
  virtual WriteResult invoke_run(const RunRequest& request) = 0;
  // AlreadyExists and a target that is gone are done: never retried.
  virtual WriteResult mention_run(const MentionRequest& request) = 0;
  virtual WriteResult replace_agent_status(const Json& status) = 0;
  virtual WriteResult write_run_status(const PlannedWrite& write) = 0;
  virtual WriteResult start_run(const std::string& run) = 0;
  // kDone: the Job made (its run left to the next pass), or the run made
  // and ended or queued without a Job (kHeldBack when held back).
  virtual WriteResult start_slot_run(const RunRequest& request) = 0;
  virtual WriteResult delete_run(const std::string& run) = 0;
  virtual void record_event(const Event& event) = 0;
};

struct PlanOutcome {
  bool completed = false;  // no write failed
  bool start_held_back = false;
  // The pass ended after the Job it made; the rest of the plan was not
  // performed and is for the next pass, queued at once.
  bool rest_left = false;
  std::size_t performed = 0;  // writes performed (the failed one not included)
};

PlanOutcome perform_plan(const std::vector<PlannedWrite>& plan, PlanWriter& writer);

// The final statuses a plan writes (counted and folded runs), by run name.
std::map<std::string, Json> final_statuses(const std::vector<PlannedWrite>& plan);

// True when every write of the plan (none at all, too) is bookkeeping:
// nothing in it starts, ends or counts a heartbeat, so it may wait for a
// later pass without delaying one (the per-agent objects go first then).
bool only_bookkeeping(const std::vector<PlannedWrite>& plan);

}  // namespace hb::controllers
