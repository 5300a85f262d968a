// Run status derivation: what a HeartbeatRun's status should be, given its
// Job, the Job's Pods, the agent's Lease and now. Pure: the Agent reconciler
// calls it for every run of an agent, the shell writes the result.
//
// While the Job runs nothing is written (beats go to the Lease, not to the
// run). The final status is derived again from the same objects on every
// reconcile until it is written, so a crash in between loses nothing:
// priorities are fixed (cancel > deadline > stall > exit code) and times come
// from the Pod where possible.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <vector>

#include "api/contract_limits.h"
#include "controllers/model/event.h"
#include "controllers/model/idle_backoff.h"
#include "controllers/model/json_util.h"
#include "controllers/model/run_cost.h"
#include "controllers/model/run_view.h"
#include "controllers/run/run_pod_state.h"  // pick_pod

namespace hb::controllers {

using namespace std::chrono_literals;

// A Lease renewTime further ahead of the operator's clock than this is not a
// beat (a clock that far off, or a forged time, must not hold off the stall
// watchdog): the run is judged as if that beat never came.
inline constexpr std::chrono::seconds kLeaseRenewFutureSkewMax = 60s;
// A Job created moments ago may not be in the cache yet.
inline constexpr std::chrono::seconds kJobCacheGrace = 30s;
// The controller-side deadline: timeoutSeconds + graceSeconds + this after
// the start, the operator deletes the Job itself (the Job controller may be
// down, or the Pod never scheduled).
inline constexpr std::chrono::seconds kControllerDeadlineSlack = 30s;
// After the Job is gone, how long a terminating Pod may take past its
// deletion deadline before the run is finished without its result.
inline constexpr std::chrono::seconds kPodGoneSlack = 10s;
// A runner container the kubelet cannot configure (CreateContainerConfigError:
// the apiKeySecretRef Secret or key is missing, say) is given this long from
// its Pod's creation (a GitOps apply may create the Secret a moment after the
// Agent) before the run fails and its Job is deleted.
inline constexpr std::chrono::seconds kContainerConfigErrorGrace = 30s;
// Output excerpt kept in run status.
inline constexpr std::size_t kRunOutputExcerptBytesMax = 1024;
inline constexpr std::size_t kRunMessageBytesMax = 1024;

// Reasons (CamelCase).
inline constexpr const char* kReasonCostMismatch = "CostMismatch";
// A result asked to pause heartbeats where the agent may not (pause_allowed).
inline constexpr const char* kReasonPauseIgnored = "PauseIgnored";
// The result's model-call durations were not believable (api/call_durations.h).
inline constexpr const char* kReasonCallDurationsDropped = "CallDurationsDropped";
inline constexpr const char* kReasonToolsUnavailable = "ToolsUnavailable";
inline constexpr const char* kReasonStalled = "Stalled";
inline constexpr const char* kReasonDeadlineExceeded = "DeadlineExceeded";
inline constexpr const char* kReasonCancelled = "Cancelled";
inline constexpr const char* kReasonAgentNotFound = "AgentNotFound";
inline constexpr const char* kReasonBudgetExceeded = "BudgetExceeded";
inline constexpr const char* kReasonResultUnreadable = "ResultUnreadable";
inline constexpr const char* kReasonJobDeleted = "JobDeleted";
inline constexpr const char* kReasonContainerConfigError = "ContainerConfigError";
// The run could not start: its promptFrom ConfigMap or key does not exist.
inline constexpr const char* kReasonPromptNotFound = "PromptNotFound";
// The run's context document (the prompt, memory, earlier outputs...) would
// pass api::kContextDocumentBytesMax; the message names the prompt's source
// and size. A person must shorten it: the Agent is Stalled.
inline constexpr const char* kReasonContextTooLarge = "ContextTooLarge";
// The resolved heartbeat prompt is empty (or only whitespace): nothing to do.
inline constexpr const char* kReasonPromptEmpty = "PromptEmpty";
// The agent's Lease reports less usage for a run than it reported before:
// anyone who may run a Pod as the agent's runner ServiceAccount can rewrite
// it, so the highest report seen is kept (status.reportedUsage) and charged.
inline constexpr const char* kReasonUsageReportLowered = "UsageReportLowered";
// Where the highest usage report seen is kept once a lower one has been seen.
inline constexpr const char* kStatusReportedUsage = "reportedUsage";

struct RunTimeouts {
  std::chrono::seconds timeout{600};
  std::chrono::seconds grace{30};
  // Without a beat renewing the agent's Lease this long, the run is Stalled.
  std::chrono::seconds stall_window = api::kRunStallWindowDefault;
};

struct RunObservationInput {
  const Json* run = nullptr;  // required
  // view_run(*run), when the caller keeps it (the shell's view cache);
  // null: parsed here.
  std::shared_ptr<const RunView> view;
  const Json* job = nullptr;      // the run's Job from the cache, if any
  std::vector<const Json*> pods;  // the Job's Pods from the cache
  const Json* lease = nullptr;    // the agent's Lease, if any
  // When this operator first saw the Lease's current version, on `now`'s
  // clock (client-go's observedTime): a beat seen lately is alive whatever
  // the runner's clock wrote in renewTime. Unset: renewTime alone decides.
  std::optional<TimePoint> lease_seen_at;
  // The highest usage this operator saw the run report on any version of
  // the Lease (the cache's high-water mark, field by field); nullopt: none
  // seen since this process started.
  std::optional<UsageCounts> reported_high;
  // When the operator first saw this unfinished run with its Job, on its
  // steady clock (LeaseSightings): the stall window counts from no earlier.
  std::optional<TimePoint> run_seen_at;
  RunTimeouts timeouts;
  // What the operator charges (run_cost.h): the effective pricing
  // (pricing.h: the Agent's and its policies') and the run's usage bounds.
  // Zero when the Agent is gone (nobody to charge).
  Pricing pricing;
  // Whose price `pricing` is (pricing.h kPricingSource*), and the policy
  // ("ns/name") whose price was charged; empty when none was.
  std::string pricing_source = "agent";
  std::string pricing_policy;
  UsageBounds bounds;
  // The Agent's spec.model.provider and model: with `pricing`, the charge
  // a final status records (status.charge).
  std::string provider;
  std::string model;
  // The policies that admitted the run (run_record.h admitting_policies):
  // the final status records them, and the ledger charges under them.
  std::vector<std::string> admitting_policies;
  bool agent_missing = false;  // the Agent is gone or being deleted
  // A result's pauseMinutes moves the schedule (pause_allowed); else it is
  // ignored with a warning Event (a forged or unsupported request).
  bool pause_allowed = true;
  // The Agent's archival claim: the stored transcript's ref names it. Empty:
  // no stored transcripts (a record a result claims anyway is not believed).
  std::string archival_claim;
  // A succeeded run whose output is this acted on nothing (idle_backoff.h).
  std::string idle_token = std::string(kIdleTokenDefault);
  // This month's spend has reached the agent's budget (say the budget was
  // lowered mid-run): a started run is cancelled; a Queued one keeps waiting.
  bool budget_exceeded = false;
  // Today's spend has reached spec.budget.dailyCents: as budget_exceeded
  // (reason DailyBudgetExceeded).
  bool daily_budget_exceeded = false;
  // "ns/name" of a paused HeartbeatPolicy with spec.cancelRunning over the
  // agent: a started run is cancelled as for a spent budget (reason
  // PolicyPaused); a Queued one keeps waiting. Empty: none.
  std::string cancelled_by_policy;
  // "ns/name" of a HeartbeatPolicy whose team budget is spent and whose
  // spec.onExceeded is Cancel: a started run is cancelled as for a spent
  // agent budget (reason PolicyBudgetExceeded). Empty: none.
  std::string stopped_by_team_budget;
  // Its daily budget (spec.budget.dailyCents) is the one spent, not the month's.
  bool team_budget_daily = false;
  // The run's token cap (pricing.h effective_per_run_tokens); none: no cap.
  // The runner starts only a call whose worst case fits under it, so no call
  // is larger than the cap: a charge past twice the cap (the cap plus one
  // call's worth) is named, reason TokenCapExceeded. The charge is unchanged.
  std::optional<int64_t> per_run_tokens;
  TimePoint now{};
};

struct RunObservation {
  std::shared_ptr<const RunView> view;  // as stored; never null
  // Final with its cost recorded: nothing left to derive, count or write, so
  // `status` is not copied (it stays null).
  bool settled = false;
  Json status;                         // desired status (the stored one while nothing changed)
  RunPhase phase = RunPhase::kQueued;  // desired phase
  bool became_final = false;           // final now, not yet written
  // Unfinished: its Pod's runner container has started (past a missing
  // Secret), which the Agent's Stalled condition waits for.
  bool runner_started = false;
  bool delete_job = false;              // cancel, stall or deadline: delete the Job (Background)
  bool cost_mismatch = false;           // became final; the runner's cost differs from ours
  std::optional<TimePoint> recheck_at;  // when the derivation could change by time alone
  std::vector<Event> events;
};

RunObservation observe_run(const RunObservationInput& input);

// The usage the runner reported on its last Lease beat, when the Lease's
// report names this run (api/usage_report.h); nullopt otherwise.
std::optional<UsageCounts> beat_usage(const Json* lease, const std::string& run_name);

// The highest usage the run is known to have reported: the Lease's current
// report, the cache's high-water mark and status.reportedUsage, field by
// field; nullopt when none of them has one.
std::optional<UsageCounts> highest_reported_usage(const RunObservationInput& input,
                                                  const std::string& run_name);

}  // namespace hb::controllers
