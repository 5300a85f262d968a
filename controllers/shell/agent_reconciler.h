// The imperative shell around the decisions: one reconcile per agent key
// reads the agent, its runs, their Jobs and Pods and the agent's Lease from
// the caches, calls observe_run and decide_agent, turns the decision into an
// ordered plan of writes (controllers/plan/write_plan.h, which says the order and
// why it is crash-safe) and performs it, stopping at the first failure; the
// key is then retried with backoff and the next attempt re-derives
// everything from the caches.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>

#include "api/trace_context.h"
#include "controllers/agent/agent_decision.h"
#include "controllers/plan/orphan_plan.h"
#include "controllers/plan/start_plan.h"
#include "controllers/plan/write_plan.h"
#include "controllers/pod/job_builder.h"
#include "controllers/pod/scheduling_span.h"
#include "controllers/run/run_after_job.h"
#include "controllers/run/run_record.h"
#include "controllers/runtime/budget_blocked.h"
#include "controllers/runtime/genai_metrics.h"
#include "controllers/runtime/metrics.h"
#include "controllers/shell/agent_api_writes.h"
#include "controllers/shell/budget_holds.h"
#include "controllers/shell/cluster_view.h"
#include "controllers/shell/concurrency_gate.h"
#include "controllers/shell/genai_charges.h"
#include "controllers/shell/lease_sightings.h"
#include "controllers/shell/ledger_store.h"
#include "controllers/shell/policy_index.h"
#include "controllers/shell/provider_holds.h"
#include "controllers/shell/view_cache.h"
#include "controllers/shell/write_overlay.h"
#include "kube/client.h"

namespace hb::controllers {

// An object in the way of an Agent's own (not owned by it) is looked for again after this.
inline constexpr std::chrono::seconds kObjectInTheWayRecheck{60};
inline constexpr std::size_t kEventMessageBytesMax = 1024;
// Agents in refused namespaces given an Event each (after that, the log only).
inline constexpr std::size_t kRefusedAgentsNotedMax = 1024;
inline constexpr const char* kReasonNamespaceNotManaged = "NamespaceNotManaged";
// A pass that made a Job leaves its other writes to a pass queued this soon
// (at the back of the work queue, behind the agents already waiting).
inline constexpr std::chrono::milliseconds kRestOfPassAfter{1};

struct ReconcilerConfig {
  JobConfig job;
  bool routine_events = false;  // also record RunScheduled/RunSucceeded (one write each)
  // An Agent status change that only says a run started waits this long
  // (AgentDecisionInput::status_coalesce).
  std::chrono::seconds status_coalesce = kStatusCoalesceSecondsDefault;
  std::string controller_name = "agent";
  // --max-concurrent-runs: shared with the runs' informer, which counts the
  // fleet's running runs; null: no cap.
  std::shared_ptr<ConcurrencyGate> concurrency;
  // The HeartbeatPolicies' team budgets (kept by the cache); null: none.
  std::shared_ptr<const PolicyIndex> policies;
  // The durable ledger (shell/ledger_store.h); null: each Agent's status
  // is its ledger (unit tests of other parts).
  std::shared_ptr<LedgerStore> ledger;
  // Provider quota holds (kept by the cache); null: none.
  std::shared_ptr<const ProviderHolds> provider_holds;
  // --run-retention: a finished run whose Agent is gone is deleted this long
  // after it finished (zero: kept until someone deletes it).
  std::chrono::seconds run_retention = kRunRetentionDefault;
  // Where the operator runs: never managed, nor the system namespaces
  // (managed_namespaces.h); an Agent there is not read, written or woken.
  std::string own_namespace;
  // Takes the span of each heartbeat the reconciler starts
  // (scheduling_span.h); must not block (otlp::Exporter::offer). Null: none.
  std::function<void(otlp::Span)> export_span;
};

struct ReconcileResult {
  std::optional<std::chrono::milliseconds> requeue_after;
};

class AgentReconciler {
 public:
  using Clock = std::function<TimePoint()>;
  // Measures how long things were remembered (not wall time).
  using SteadyClock = std::function<std::chrono::steady_clock::time_point()>;
  // Reads and writes through `client`.
  AgentReconciler(
      std::shared_ptr<kube::Client> client, const ClusterView& view, ReconcilerConfig config,
      Metrics& metrics, Clock clock = [] { return std::chrono::system_clock::now(); },
      SteadyClock steady = std::chrono::steady_clock::now);
  // Reads through `client` and writes through `writes` (a unit test's
  // recording fake); null `writes`: through `client` too.
  AgentReconciler(std::shared_ptr<kube::Client> client, std::shared_ptr<AgentApiWrites> writes,
                  const ClusterView& view, ReconcilerConfig config, Metrics& metrics, Clock clock,
                  SteadyClock steady);

  // An Error when an API call failed: the pass stopped there and the key is
  // retried (operator/reconcile_workers.h decides when).
  kube::Result<ReconcileResult> reconcile(const std::string& ns, const std::string& name);

  // Reads through the overlay (also used by the wakeup endpoint).
  std::vector<Json> runs_of(const std::string& ns, const std::string& agent);
  std::optional<Json> agent(const std::string& ns, const std::string& name);
  TimePoint now() const { return clock_(); }  // the injected clock
  // Creates a run and remembers it (read-your-writes).
  kube::Result<Json> create_run(const std::string& ns, const Json& run);
  // Reads a run from the API server (after an AlreadyExists, say).
  kube::Result<Json> get_run(const std::string& ns, const std::string& name);

 private:
  // The heartbeat prompt, or why there is none (`gap`).
  struct Prompt {
    std::optional<std::string> text;
    PromptGap gap;       // set when text is not
    std::string source;  // where the text came from, for a message
    PromptText view() const { return {text ? &*text : nullptr, text ? nullptr : &gap, source}; }
  };
  // The heartbeat prompt; no text and `gap` set when it is empty or the
  // Agent names a ConfigMap or key that does not exist. Any other failure
  // (429, 5xx, timeouts) is an Error: the pass is retried, nothing is
  // skipped or failed for good.
  kube::Result<Prompt> resolve_prompt(const Json& agent);
  // What decide_agent needs besides the observed runs (reads_needed): the
  // mentioned Agents' answers and the gate's snapshot into `input`, and the
  // prompt when a slot is due or a skip stands (nullopt: not read).
  kube::Result<std::optional<Prompt>> read_before_deciding(const std::string& ns,
                                                           const std::string& name,
                                                           const Json& agent, const AgentView& view,
                                                           const std::vector<Json>& runs,
                                                           AgentDecisionInput& input);
  kube::Done fail_before_start(const Json& agent, Json& run, const StartRefusal& refusal,
                               TimePoint now);
  // True when this process made the per-agent objects or the Agent's Lease
  // in the cache is marked (job_builder.h: agent_objects_made).
  bool agent_objects_known_made(const Json& agent, const std::optional<Json>* lease_read);
  // Creates the per-agent objects once; "" or the object in the way ("Kind ns/name").
  // `lease_read`: the agent's Lease as this pass already read it from the
  // cache (nullptr: read it here).
  kube::Result<std::string> ensure_agent_objects(const Json& agent,
                                                 const std::optional<Json>* lease_read = nullptr);
  // Puts kAnnotationAgentObjectsMade on the agent's Lease once all five exist.
  kube::Done mark_objects_made(const std::string& ns, const std::string& lease_name);
  // Deletes the Agent's Role and RoleBinding when they name `kind`/`name`,
  // an object someone else owns (agent_grants.h), once per such object.
  kube::Done remove_stale_grants(const Json& agent, const std::string& kind,
                                 const std::string& name);
  // The Role or RoleBinding (`kind`) of that name; nullopt when there is none.
  kube::Result<std::optional<Json>> read_grant(const std::string& kind, const std::string& ns,
                                               const std::string& name);
  kube::Result<bool> ensure_objects_ahead(const Json& agent, const std::optional<Json>& lease);
  // False when a run the decision charges more has changed since this pass
  // read it (decide again on the newer copy, now in the overlay).
  kube::Result<bool> runs_still_unmarked(const std::string& ns,
                                         const std::vector<std::string>& names,
                                         const std::vector<Json>& runs);
  // The object in the way of this Agent's own, as last found; looked for
  // again once kObjectInTheWayRecheck passed.
  kube::Result<std::string> object_in_the_way(const Json& agent);
  // Runs read again for a context, by name (nullopt: deleted meanwhile).
  using RereadRuns = std::map<std::string, std::optional<Json>>;
  kube::Result<RereadRuns> reread_context_runs(const std::string& ns, const AgentSpec& spec,
                                               const std::string& run_name,
                                               const std::vector<EarlierRun>& earlier);
  // `history` with the runs read again in place of the cached copies.
  static std::vector<const Json*> with_reread(const std::vector<const Json*>& history,
                                              const RereadRuns& reread);
  // False when an object in the way held the run back (it stays Queued).
  // `history`: the agent's runs as the context document tells them; `read`:
  // the prompt this pass already read, if it did.
  kube::Result<bool> start_run(const Json& agent, const AgentSpec& spec, Json& run,
                               const std::vector<const Json*>& history,
                               const std::optional<Prompt>& read, TimePoint now);
  kube::Done adopt_run(const Json& agent, const std::string& run_name);
  // Jobs made before their run (run_after_job.h): the Agent's awaiting
  // theirs, in the cache or this process's writes; each run made (before
  // the pass decides) and its Job handed to it. A made run joins `runs`.
  std::vector<Json> jobs_awaiting_run(const std::string& ns, const std::string& agent);
  // A Job to hand to its stored run: the merge patch that does it.
  struct HandOver {
    std::string job;
    Json patch;
  };
  // Makes the runs; returns the hand-overs, which hand_over_jobs performs
  // after the pass's own writes (bookkeeping, giving way to the next slot).
  kube::Result<std::vector<HandOver>> make_runs_of_jobs(const std::string& ns,
                                                        const std::string& agent,
                                                        std::vector<Json>& runs);
  kube::Done hand_over_jobs(const std::string& ns, const std::vector<HandOver>& handovers);
  kube::Done perform_job_run_step(const std::string& ns, const JobRunStep& step,
                                  std::vector<Json>& runs);
  // What making a run found: this Agent's run (made now, or by an earlier
  // pass), or its name held by a run that is not this Agent's.
  enum class RunMade { kOurs, kNameTaken };
  kube::Result<RunMade> make_run(Json& run);
  // For a run not made yet (started Job first): makes it, unless it is.
  kube::Done make_unless_made(Json& run);
  // What a run is charged at and its token cap, for the runner's own stops.
  struct RunPrices {
    Pricing pricing;
    std::optional<int64_t> per_run_tokens;
  };
  // `to_make`: for a run not made yet, its run_to_make_text.
  kube::Result<std::optional<JobPlan>> plan_job(const Json& agent, const AgentSpec& spec, Json& run,
                                                const std::optional<std::string>& to_make,
                                                const std::vector<const Json*>& history,
                                                const Prompt& prompt, const RunPrices& prices,
                                                const HoldDecision& hold, TimePoint now);
  // Creates the run's context ConfigMap and Job (each adopted when this run
  // owns it already); the Job's uid, and when this pass created it.
  struct StartedJob {
    std::string name;
    std::string uid;
    std::optional<TimePoint> created_at;  // unset when an earlier pass created it
  };
  void note_started(const Json& agent, const Json& run, const StartedJob& job);
  kube::Result<StartedJob> create_context_and_job(const Json& run, const JobPlan& plan);
  // Conditional on `run`'s resourceVersion; `run` becomes the written version.
  kube::Done write_run_status(Json& run, const Json& status, bool final_with_label);
  kube::Done delete_job(const std::string& ns, const std::string& name);
  kube::Done delete_run(const std::string& ns, const std::string& name);
  // Best effort: a failed Event write is logged, never fails the pass.
  void record_event(const Json& agent, const Json* run, const Event& event, TimePoint now);
  // Runs whose Agent is gone, each observed with its Job, Pods and the
  // policies that admitted it; each points into `runs`.
  std::vector<OrphanRun> observe_orphans(const std::string& ns, const std::vector<Json>& runs,
                                         TimePoint now);
  // One step of plan_orphans; a mark's run in `runs` becomes the written version.
  kube::Done perform_orphan_step(const std::string& ns, const std::string& name,
                                 const OrphanStep& step, std::vector<Json>& runs, TimePoint now);
  // The agent's durable record (one made from its status when it has
  // none); none without a ledger store.
  kube::Result<std::optional<LedgerRecord>> ledger_record(const std::string& ns,
                                                          const std::string& name,
                                                          const AgentStatus* status, TimePoint now);
  // Holds ahead what the run about to start may spend, at most
  // `worst_case_cents` (budget_hold_ahead.h), against the Agent's budget, by
  // its ledger record, and each team budget over it; the decision says
  // whether it waits.
  kube::Result<HoldDecision> hold_budget(const Json& agent, const Json& run, const AgentSpec& spec,
                                         double worst_case_cents, TimePoint now);
  // After a restart, before the first hold: what every in-flight run's Job
  // says was held for it.
  void restore_budget_holds();
  // The hold an uncharged run's Job records, if any (kAnnotationBudgetHold).
  void restore_budget_hold(const Json& run, const Json* job);
  // Records `charges` in the agent's durable ledger before anything else
  // the pass writes: each under the policies that admitted its run (its
  // final status, run_record.h admitting_policies) and those selecting the
  // agent now. `runs`: every run of the name (this Agent's
  // and earlier ones'), to forget the charged runs since marked or gone.
  kube::Done charge_ledger(const std::string& ns, const std::string& name, LedgerRecord record,
                           std::vector<LedgerCharge> charges, const std::vector<const Json*>& runs,
                           const date::time_zone* agent_zone, TimePoint now);
  // Runs whose Agent is gone (deleted, or an earlier Agent of this name):
  // read, planned (orphan_plan.h) and the plan performed, stopping at the
  // first failure. When the next run past --run-retention falls due.
  kube::Result<std::optional<TimePoint>> tend_orphans(const std::string& ns,
                                                      const std::string& name,
                                                      std::vector<Json>& orphans, TimePoint now);
  kube::Result<ReconcileResult> reconcile_agent(const std::string& ns, const std::string& name,
                                                Json agent, std::vector<Json>& runs, TimePoint now,
                                                kube::GiveWayTime& give_way_at);
  kube::Result<ReconcileResult> reconcile_gone(const std::string& ns, const std::string& name,
                                               std::vector<Json>& runs, TimePoint now);
  // The policies selecting the run's agent now, on the run (kAnnotationPolicies),
  // unless it names them already.
  void stamp_policies(Json& run) const;
  // run_record.h admitting_policies, knowing the namespace's policies.
  std::vector<std::string> admitting_policies_of(const Json& run, const Json* job) const;
  // kAnnotationPolicies' value for the agent now.
  std::string policies_now(const std::string& ns, const std::string& agent) const;
  // The HeartbeatPolicies selecting the agent now (none without an index).
  std::vector<PolicySpec> policies_over(const std::string& ns, const std::string& agent) const;
  struct ObservedRuns {
    std::vector<RunObservation> runs;  // one per run, in order
    std::vector<bool> has_job;         // its Job is in the cache (or was just made)
    std::optional<Json> lease;         // the agent's Lease as the cache had it
  };
  // `policies`: the HeartbeatPolicies over the agent (a paused one with
  // spec.cancelRunning cancels runs in flight); `selecting`: the same
  // policies' specs as the pass read them (prices, token caps).
  // Each run's Job from the caches, and the unfinished runs that have one.
  struct RunJobs {
    std::vector<std::optional<Json>> jobs;           // one per run
    std::vector<std::string> going_on;               // unfinished runs with a Job
    std::vector<std::optional<size_t>> going_on_at;  // run i's place in going_on
  };
  RunJobs jobs_of_runs(const std::string& ns, const std::vector<Json>& runs,
                       const AgentViews& views);
  std::optional<TimePoint> lease_seen_at(const std::string& agent_key,
                                         const std::optional<Json>& lease, const AgentViews& views,
                                         TimePoint now);
  void keep_holds_of_uncharged(const std::string& ns, const std::string& name,
                               const std::vector<Json>& runs,
                               const std::vector<std::optional<Json>>& jobs);
  ObservedRuns observe_runs(const std::string& ns, const std::string& name,
                            const std::vector<Json>& runs, const AgentViews& views,
                            const std::vector<schedule::PolicyBudget>& policies,
                            const std::vector<PolicySpec>& selecting, const LedgerRecord* ledger,
                            TimePoint now);
  // What one pass read before deciding (read_pass). `input` points into
  // `views` and `record`: filled in place, never copied or moved.
  struct PassRead {
    AgentViews views;
    std::optional<LedgerRecord> record;
    AgentDecisionInput input;
    std::vector<bool> has_job;  // ObservedRuns::has_job, until the plan takes it
    std::optional<Json> lease;
    std::optional<Prompt> prompt;  // when the pass read it before deciding
    // Runs of the Agent's name that are an earlier Agent's (not in `runs`).
    std::set<std::string> other_agents_runs;
    PassRead() = default;
    PassRead(const PassRead&) = delete;
    PassRead& operator=(const PassRead&) = delete;
  };
  // Reads what decide_agent needs for the agent and its runs: the cached
  // views, the object in the way, the ledger record, the policies, every
  // run observed, and the reads the decision asks for (read_before_deciding).
  kube::Done read_pass(const std::string& ns, const std::string& name, const Json& agent,
                       const std::vector<Json>& runs, TimePoint now, PassRead& pass);
  // Plans the decision's writes and performs them (or makes the per-agent
  // objects first, when that is all the pass would do); when to look again.
  kube::Result<ReconcileResult> perform_pass(Json& agent, std::vector<Json>& runs, PassRead& pass,
                                             const AgentDecision& d, TimePoint now);
  ReconcileResult requeue_after_pass(const std::string& key, const AgentDecision& d, TimePoint now,
                                     bool start_held_back, bool found_in_the_way, bool in_the_way);
  // Performs one pass's write plan (write_plan.h) against the API server.
  class PassWriter;
  void count_write(const char* kind);
  void settle_admissions(const std::string& agent_key, const std::string& ns,
                         const AgentDecision& d, const std::set<std::string>& admitted,
                         bool held_back);
  // Drops what was remembered about an Agent that is gone.
  void forget_agent(const std::string& key);
  // An Agent in a namespace the operator never manages: logged once per
  // namespace, an Event once per Agent (up to kRefusedAgentsNotedMax).
  void note_refused(const std::string& ns, const std::string& name, const std::string& why);

  std::shared_ptr<kube::Client> client_;
  const ClusterView& view_;
  ReconcilerConfig config_;
  Metrics& metrics_;
  Clock clock_;
  SteadyClock steady_;
  WriteOverlay overlay_;
  // The pass's API writes: KubeAgentApiWrites, which remembers what it
  // wrote in overlay_, unless a test passed a fake.
  std::shared_ptr<AgentApiWrites> writes_;
  ViewCache views_;
  LeaseSightings lease_sightings_;
  BudgetBlockedTally budget_blocked_{metrics_};
  BudgetHolds budget_holds_;
  // The GenAI client metrics of what the ledger charged (genai_metrics.h).
  GenAiChargeMetrics genai_{metrics_, api::gen_ai_latest_experimental(config_.job.semconv_opt_in)};

  std::atomic<uint64_t> events_recorded_{0};  // the last part of Event names
  std::mutex mutex_;
  // By agent key ("ns/name"), forgotten when the Agent is gone (bounded by
  // the Agents that exist); the uid tells a re-created Agent from the old one.
  std::map<std::string, std::string> ensured_agents_;  // key -> uid whose objects exist
  // key -> "uid/kind/name" of the object in the way whose grants were removed.
  std::map<std::string, std::string> grants_checked_;
  struct InTheWay {
    std::string uid;
    std::string object;
    std::chrono::steady_clock::time_point at;
  };
  std::map<std::string, InTheWay> in_the_way_;  // by agent key
  // Agents whose run waits for room runs in flight hold: looked at again
  // after kBudgetHoldRecheck, not at once.
  std::set<std::string> waiting_for_budget_;
  std::set<std::string> refused_namespaces_logged_;  // at most the namespaces refused
  std::set<std::string> refused_agents_noted_;       // agent uids, bounded
};

}  // namespace hb::controllers
