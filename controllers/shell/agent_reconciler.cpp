#include "controllers/shell/agent_reconciler.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "controllers/agent/agent_conditions.h"
#include "controllers/model/managed_namespaces.h"
#include "controllers/model/names.h"
#include "controllers/shell/agent_pass_writer.h"
#include "kube/errors.h"

namespace hb::controllers {

namespace {

// Also looked at again when the next orphaned run falls past retention.
ReconcileResult with_retention(ReconcileResult result, std::optional<TimePoint> due,
                               TimePoint now) {
  if (!due) return result;
  const auto delay = std::max(std::chrono::ceil<std::chrono::milliseconds>(*due - now),
                              std::chrono::milliseconds(1));
  result.requeue_after = std::min(result.requeue_after.value_or(delay), delay);
  return result;
}

// Moves the runs of an earlier Agent of this name out of `runs` (run_record.h).
std::vector<Json> take_runs_of_other_agents(std::vector<Json>& runs, const std::string& uid) {
  const auto theirs = std::stable_partition(
      runs.begin(), runs.end(), [&](const Json& run) { return !run_of_other_agent(run, uid); });
  std::vector<Json> out(std::make_move_iterator(theirs), std::make_move_iterator(runs.end()));
  runs.erase(theirs, runs.end());
  return out;
}

// When this pass's writes that wait for the rate limiter give way: at the
// agent's next heartbeat, on the steady clock the limiter runs on.
kube::GiveWayTime give_way_time(const AgentDecision& d, TimePoint now,
                                std::chrono::steady_clock::time_point steady_now) {
  if (!d.next_heartbeat || *d.next_heartbeat <= now) return std::nullopt;
  return steady_now +
         std::chrono::duration_cast<std::chrono::steady_clock::duration>(*d.next_heartbeat - now);
}

// A run written is listed with its agent's runs (runs_of), a Job awaiting
// its run with its agent's such Jobs (jobs_awaiting_run).
std::string overlay_group(const std::string& kind, const Json& object) {
  if (kind == kOverlayRuns) {
    return object_key(namespace_of(object), string_at(object, "spec/agentRef/name"));
  }
  if (kind == kOverlayJobs && awaits_its_run(object)) {
    return object_key(namespace_of(object),
                      std::string(annotation_at(object, kAnnotationAgentName)));
  }
  return {};
}

}  // namespace

AgentReconciler::AgentReconciler(std::shared_ptr<kube::Client> client, const ClusterView& view,
                                 ReconcilerConfig config, Metrics& metrics, Clock clock,
                                 SteadyClock steady)
    : AgentReconciler(std::move(client), nullptr, view, std::move(config), metrics,
                      std::move(clock), std::move(steady)) {}

AgentReconciler::AgentReconciler(std::shared_ptr<kube::Client> client,
                                 std::shared_ptr<AgentApiWrites> writes, const ClusterView& view,
                                 ReconcilerConfig config, Metrics& metrics, Clock clock,
                                 SteadyClock steady)
    : client_(std::move(client)),
      view_(view),
      config_(std::move(config)),
      metrics_(metrics),
      clock_(std::move(clock)),
      steady_(std::move(steady)),
      overlay_(steady_, overlay_group),
      writes_(std::move(writes)),
      lease_sightings_(steady_) {
  if (!writes_) writes_ = std::make_shared<KubeAgentApiWrites>(client_, overlay_, metrics_);
}

void AgentReconciler::forget_agent(const std::string& key) {
  std::lock_guard lock(mutex_);
  ensured_agents_.erase(key);
  grants_checked_.erase(key);
  in_the_way_.erase(key);
  lease_sightings_.forget(key);
  budget_blocked_.forget(key);
}

void AgentReconciler::note_refused(const std::string& ns, const std::string& name,
                                   const std::string& why) {
  const std::optional<Json> agent = view_.agent(ns, name);
  const std::string uid = agent ? string_at(*agent, "metadata/uid") : "";
  bool log = false, noted = false;
  {
    std::lock_guard lock(mutex_);
    log = refused_namespaces_logged_.insert(ns).second;
    noted = !uid.empty() && refused_agents_noted_.size() < kRefusedAgentsNotedMax &&
            refused_agents_noted_.insert(uid).second;
  }
  if (log) spdlog::warn("event=namespace_not_managed namespace={} reason=\"{}\"", ns, why);
  if (!noted) return;
  Event event;
  event.warning = true;
  event.reason = kReasonNamespaceNotManaged;
  event.message = "This Agent is ignored: " + why + ". Create it in another namespace.";
  record_event(*agent, nullptr, event, clock_());
}

void AgentReconciler::count_write(const char* kind) {
  count_api_write(metrics_, kind);
}

kube::Result<ReconcileResult> AgentReconciler::reconcile(const std::string& ns,
                                                         const std::string& name) {
  if (std::string why = namespace_refusal(ns, config_.own_namespace); !why.empty()) {
    note_refused(ns, name, why);
    return ReconcileResult{};
  }
  const TimePoint now = clock_();
  std::optional<Json> agent_opt = agent(ns, name);
  std::vector<Json> runs = runs_of(ns, name);
  HB_TRY_ASSIGN(const std::vector<HandOver> handovers, make_runs_of_jobs(ns, name, runs));
  if (!agent_opt || find_path(*agent_opt, "metadata/deletionTimestamp") != nullptr) {
    HB_TRY(hand_over_jobs(ns, handovers));
    return reconcile_gone(ns, name, runs, now);
  }
  // The hand-overs after the pass's own writes, however the pass ends:
  // until then deleting the run would leave its Job behind.
  kube::GiveWayTime give_way_at;
  kube::Result<ReconcileResult> result =
      reconcile_agent(ns, name, std::move(*agent_opt), runs, now, give_way_at);
  if (handovers.empty()) return result;
  kube::GiveWayScope give_way(give_way_at);
  kube::Done handed = hand_over_jobs(ns, handovers);
  if (result.ok() && !handed.ok()) return std::move(handed).error();
  return result;
}

// Decides and performs the pass of an Agent that exists; `give_way_at`:
// when the writes after it give way (its next heartbeat), once decided.
kube::Result<ReconcileResult> AgentReconciler::reconcile_agent(const std::string& ns,
                                                               const std::string& name, Json agent,
                                                               std::vector<Json>& runs,
                                                               TimePoint now,
                                                               kube::GiveWayTime& give_way_at) {
  // Runs of an earlier Agent of this name are never this one's: not
  // adopted, counted, shown in its context or trimmed by its history limits.
  std::vector<Json> orphans = take_runs_of_other_agents(runs, string_at(agent, "metadata/uid"));
  HB_TRY_ASSIGN(const std::optional<TimePoint> orphans_due, tend_orphans(ns, name, orphans, now));
  PassRead pass;
  for (const Json& orphan : orphans) pass.other_agents_runs.insert(name_of(orphan));
  HB_TRY(read_pass(ns, name, agent, runs, now, pass));
  AgentDecision d = decide_agent(pass.input);
  give_way_at = give_way_time(d, now, steady_());
  HB_ASSERT_MSG(!config_.concurrency || !d.start_run || d.admission_request,
                "a start is only decided from a snapshot of the gate");
  // A place freed since the snapshot: this pass writes what it decided and
  // the next, queued at once through its result (so a failed pass keeps its
  // backoff), decides the start again.
  const bool decide_again = config_.concurrency && d.admission_request &&
                            !d.admission_assumed.admitted &&
                            config_.concurrency->stand_in_line(*d.admission_request);
  HB_TRY_ASSIGN(const bool current, runs_still_unmarked(ns, d.confirm_unmarked, runs));
  if (!current) return ReconcileResult{std::chrono::milliseconds(1)};  // decide on the newer copy
  if (pass.record && !d.ledger_charges.empty()) {
    std::vector<const Json*> all;
    for (const std::vector<Json>* list : {&runs, &orphans}) {
      for (const Json& r : *list) all.push_back(&r);
    }
    HB_TRY(charge_ledger(ns, name, *pass.record, std::move(d.ledger_charges), all,
                         pass.views.agent->spec.spec.time_zone, now));
  }
  HB_TRY_ASSIGN(ReconcileResult result, perform_pass(agent, runs, pass, d, now));
  if (decide_again) result.requeue_after = std::chrono::milliseconds(0);
  return with_retention(result, orphans_due, now);
}

kube::Done AgentReconciler::read_pass(const std::string& ns, const std::string& name,
                                      const Json& agent, const std::vector<Json>& runs,
                                      TimePoint now, PassRead& pass) {
  pass.views = views_.views(object_key(ns, name), agent, runs);
  AgentDecisionInput& input = pass.input;
  input.view = pass.views.agent.get();
  HB_TRY_ASSIGN(input.env.object_in_the_way, object_in_the_way(agent));
  input.now = now;
  input.status_coalesce = config_.status_coalesce;
  HB_TRY_ASSIGN(pass.record, ledger_record(ns, name, &pass.views.agent->status, now));
  input.ledger = pass.record ? &*pass.record : nullptr;
  if (config_.policies)
    input.policy_budgets = config_.policies->budgets_for(object_key(ns, name), now);
  input.policies = policies_over(ns, name);
  input.runner_image = config_.job.default_image;
  if (config_.provider_holds) {
    input.provider_hold = config_.provider_holds->hold_for(provider_credential(agent), now);
  }
  ObservedRuns observed = observe_runs(ns, name, runs, pass.views, input.policy_budgets,
                                       input.policies, input.ledger, now);
  input.runs = std::move(observed.runs);
  pass.has_job = std::move(observed.has_job);
  pass.lease = std::move(observed.lease);
  HB_TRY_ASSIGN(pass.prompt, read_before_deciding(ns, name, agent, *pass.views.agent, runs, input));
  return kube::done();
}

kube::Result<ReconcileResult> AgentReconciler::perform_pass(Json& agent, std::vector<Json>& runs,
                                                            PassRead& pass, const AgentDecision& d,
                                                            TimePoint now) {
  const std::string ns = namespace_of(agent);
  const std::string key = object_key(agent);
  const std::vector<PlannedWrite> plan = plan_writes({.decision = &d,
                                                      .observed = &pass.input.runs,
                                                      .runs = &runs,
                                                      .has_job = std::move(pass.has_job),
                                                      .routine_events = config_.routine_events,
                                                      .now = now});
  // Anything the plan does not class (a read on its behalf, the objects
  // made ahead below) queues as bookkeeping.
  kube::RequestPriorityScope bookkeeping(kube::RequestClass::kBookkeeping);
  kube::GiveWayScope give_way(give_way_time(d, now, steady_()));
  const bool in_the_way = !pass.input.env.object_in_the_way.empty();
  const bool objects_ahead = !in_the_way && pass.views.agent->spec.valid() && !d.start_run;
  if (objects_ahead && only_bookkeeping(plan) && !agent_objects_known_made(agent, &pass.lease)) {
    // Objects first, the rest (the agent's status) in a pass queued behind
    // every other key: a fleet applied at once gets every agent's objects,
    // which its first heartbeat needs, before any agent's first status,
    // which nothing waits for (docs/operator.md, "Five objects per agent").
    HB_TRY(ensure_objects_ahead(agent, pass.lease));  // in the way: that pass reports it
    settle_admissions(key, ns, d, {}, true);
    return ReconcileResult{kRestOfPassAfter};
  }
  PassWriter writer(*this, agent, pass.views.agent->spec.spec, runs, now);
  writer.prompt = std::move(pass.prompt);
  writer.finals_ahead = final_statuses(plan);
  writer.other_agents_runs = std::move(pass.other_agents_runs);
  if (d.admission_assumed.admitted) writer.admission = d.admission_request;
  const PlanOutcome outcome = perform_plan(plan, writer);
  settle_admissions(key, ns, d, writer.admitted, outcome.start_held_back);
  if (!outcome.completed) return std::move(*writer.error);
  if (outcome.rest_left) return ReconcileResult{kRestOfPassAfter};
  budget_blocked_.record(key, budget_block_reason(d.status));
  bool found_in_the_way = false;  // by the objects made ahead: decide again at once
  if (objects_ahead) {
    HB_TRY_ASSIGN(found_in_the_way, ensure_objects_ahead(agent, pass.lease));
  }
  return requeue_after_pass(key, d, now, outcome.start_held_back, found_in_the_way, in_the_way);
}

// The Agent is gone or going: forget it; its runs are orphans.
kube::Result<ReconcileResult> AgentReconciler::reconcile_gone(const std::string& ns,
                                                              const std::string& name,
                                                              std::vector<Json>& runs,
                                                              TimePoint now) {
  views_.forget(object_key(ns, name));
  forget_agent(object_key(ns, name));
  if (config_.concurrency) config_.concurrency->withdraw(object_key(ns, name));
  HB_TRY_ASSIGN(const std::optional<TimePoint> due, tend_orphans(ns, name, runs, now));
  return with_retention(ReconcileResult{}, due, now);
}

// A place the gate reserved for a run this pass did not start (decided
// again without it, held back by an object in the way) is given back at
// once; an agent that starts nothing leaves the line. A pass that failed
// part way keeps its reservation: the retry starts that run.
void AgentReconciler::settle_admissions(const std::string& agent_key, const std::string& ns,
                                        const AgentDecision& d,
                                        const std::set<std::string>& admitted, bool held_back) {
  if (!config_.concurrency) return;
  for (const std::string& run : admitted) {
    if (held_back || d.start_run != run) config_.concurrency->release(object_key(ns, run));
  }
  if (!d.start_run && !d.concurrency_limited) config_.concurrency->withdraw(agent_key);
}

}  // namespace hb::controllers
