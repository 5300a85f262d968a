// The Agent reconciler's decision: a pure function of (agent, its runs as
// observed, now) that says what the agent's status should be and what to do:
// create the slot's run, start a queued run, mark counted runs, delete old
// runs, record Events, and when to look again. The shell executes it in a
// fixed, crash-safe order (docs/operator.md).
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "controllers/agent/agent_view.h"
#include "controllers/agent/coalesce.h"
#include "controllers/agent/prompt_skip.h"
#include "controllers/model/agent_spec.h"
#include "controllers/model/agent_status.h"
#include "controllers/model/conditions.h"
#include "controllers/model/event.h"
#include "controllers/model/json_util.h"
#include "controllers/model/spend_ledger.h"
#include "controllers/policy/concurrency.h"
#include "controllers/policy/policy_status.h"
#include "controllers/run/run_status.h"
#include "controllers/schedule/blocks.h"
#include "controllers/spend/ledger_record.h"

namespace hb::controllers {

// Agent phases.
inline constexpr const char* kAgentPhaseIdle = "Idle";
inline constexpr const char* kAgentPhaseRunning = "Running";
inline constexpr const char* kAgentPhasePaused = "Paused";
inline constexpr const char* kAgentPhaseBudgetExceeded = "BudgetExceeded";
inline constexpr const char* kAgentPhaseInvalid = "Invalid";

// How long an Agent status change that only says "a run started" (phase
// Running, activeRun, lastScheduleTime, nextHeartbeatTime) may wait, so a
// heartbeat that ends sooner writes its start and its end in one update.
inline constexpr std::chrono::seconds kStatusCoalesceSecondsDefault{10};
inline constexpr std::chrono::seconds kStatusCoalesceSecondsMax{300};

// A run the decision wants created; make_run_object gives the object to
// create (built only for the write).
struct RunRequest {
  std::string name;         // deterministic: the slot's or the annotation's
  std::string_view source;  // kSourceScheduler | kSourceManual
  std::optional<TimePoint> slot;
  std::string trigger_detail;
};

// A callback run for another Agent that a run's output @mentioned.
struct MentionRequest {
  std::string target;  // the Agent woken
  std::string name;    // mention_run_name: deterministic
  std::string trigger_detail;
  int64_t depth = 1;  // the mentioning run's depth + 1
};

struct AgentDecisionInput {
  // The agent: its view (the shell keeps one per stored version), or the
  // object itself, viewed here. One of the two is required.
  const AgentView* view = nullptr;
  const Json* agent = nullptr;
  std::vector<RunObservation> runs;  // every run of the agent, observed
  SpecEnvironment env;
  TimePoint now{};
  std::chrono::seconds status_coalesce{0};  // 0: write every change at once
  // spec.heartbeat.promptFrom as the shell read it, when needs_prompt_read
  // said to (prompt_skip.h); an inline prompt is judged from the spec.
  PromptRead prompt;
  // For each Agent the finished runs' output @mentions (reads_needed's
  // mention_targets): whether it accepts a mention from this one, as the
  // shell found it in its cache. A target not in the map wakes nobody.
  std::map<std::string, bool> mention_accepted;
  // The concurrency gate as the shell counted it before deciding (its
  // pools over this agent); nullopt: no cap.
  std::optional<GateSnapshot> gate;
  // The team budgets of the HeartbeatPolicies that select the agent, by
  // policy name (the shell sums their agents' spend).
  std::vector<schedule::PolicyBudget> policy_budgets;
  // The HeartbeatPolicies that select the agent (their prices and what they
  // refuse, pricing.h), and the operator's runner image (--runner-image).
  std::vector<PolicySpec> policies;
  std::string runner_image;
  // A provider quota hold over the agent's endpoint and API key (the shell
  // keeps them from the runs that ended with stopReason provider_quota).
  std::optional<schedule::ProviderHold> provider_hold;
  // The agent's durable ledger (ledger_record.h): the spend counted from
  // and the runs it charged. Null: the Agent's status is the ledger.
  const LedgerRecord* ledger = nullptr;
};

struct AgentDecision {
  std::vector<std::string> spec_errors;  // each names the field; empty: the spec is valid
  AgentStatus status;                    // desired status
  bool status_changed = false;           // differs from the stored status: write it
  // The status differs only by a run's start and waits for the coalescing
  // window (status_changed is false; requeue_at is no later than the window's end).
  bool status_deferred = false;
  bool ledger_changed = false;           // spend/recentRuns grew: the write must be conditional
  std::optional<RunRequest> create_run;  // a scheduler run for the due slot
  std::optional<RunRequest> invoke_run;  // a manual run asked for by annotation
  // Callback runs for the agents this agent's finished, not yet marked runs
  // @mentioned (created before the ledger write, by deterministic name).
  std::vector<MentionRequest> mention_runs;
  std::optional<std::string> start_run;  // a Queued run to start now (Job)
  // The run that would have started but waits for a place under the
  // concurrency cap (reason ConcurrencyLimited).
  std::optional<std::string> concurrency_limited;
  // With a gate snapshot and a run to start: the place asked for, and the
  // answer the snapshot gave. The shell commits an admitted one with the
  // gate before the Job is made (a refusal then holds the start back) and
  // stands a refused one in the gate's line.
  std::optional<StartCandidate> admission_request;
  Admission admission_assumed;
  // Runs counted now, at the figure counted: the durable ledger records
  // them before any other write of the pass (their policies are the shell's to add).
  std::vector<LedgerCharge> ledger_charges;
  std::vector<std::string> mark;  // write final status + costRecorded after the status
  // Runs whose earlier charge this decision raises: the shell confirms from
  // the API server that each is still unmarked before writing anything.
  std::vector<std::string> confirm_unmarked;
  std::vector<Coalescing> coalesce;  // queued callback runs folded into an earlier one
  std::map<std::string, std::string> queued_messages;  // Queued runs: why they wait
  std::vector<std::string> delete_runs;                // beyond historyLimits
  std::vector<Event> events;
  std::optional<TimePoint> requeue_at;
  // The next slot that may start a heartbeat (none while a block holds the
  // agent): this pass's writes that wait for the rate limiter give way
  // then (kube::GiveWayScope), so that slot's pass is not kept waiting.
  std::optional<TimePoint> next_heartbeat;

  // The desired status as the API takes it (only needed to write it).
  Json status_json() const { return to_json(status); }
};

AgentDecision decide_agent(const AgentDecisionInput& input);

// What the shell reads before deciding, from what it holds already: a read
// the decision may need is made once, before decide_agent runs once.
struct ReadsNeeded {
  // spec.heartbeat.promptFrom: a scheduler slot is due whose run does not
  // exist yet, or the last slot was skipped. A superset of the passes whose
  // decision makes the slot's run: of the blocks only spec.paused and a
  // spent budget are looked at, and idle backoff is not.
  bool prompt = false;
  // A gate snapshot: a run may start (one is Queued, or a slot is due).
  bool gate = false;
  // The Agents to look up for mention_accepted, at most kMentionTargetsPerPassMax.
  std::vector<std::string> mention_targets;
};

// `ledger`: as AgentDecisionInput::ledger.
ReadsNeeded reads_needed(const AgentView& view, const std::vector<RunObservation>& runs,
                         const LedgerRecord* ledger, TimePoint now);

// The run object a decision asks for.
Json make_run_object(const AgentSpec& agent, const RunRequest& request);
// The run object for a scheduler slot (deterministic name) or a manual/callback run.
Json make_run_object(const AgentSpec& agent, std::string_view source, std::string_view name,
                     std::string_view generate_name, std::optional<TimePoint> slot,
                     std::string_view trigger_detail);

// This month's recorded spend has reached spec.budget.monthlyCents: a run
// still going is cancelled (observe_run's budget_exceeded).
bool monthly_budget_spent(const AgentView& agent, TimePoint now,
                          const LedgerRecord* ledger = nullptr);

// Today's spend in the durable ledger has reached spec.budget.dailyCents:
// a run still going is cancelled (observe_run's daily_budget_exceeded).
bool daily_budget_spent(const AgentSpec& spec, TimePoint now, const LedgerRecord* ledger);

// Deterministic name for the manual run an invoke annotation asks for.
std::string invoke_run_name(const AgentSpec& agent, std::string_view value,
                            std::string_view previous_run);

}  // namespace hb::controllers
