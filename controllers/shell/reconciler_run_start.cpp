// The AgentReconciler starting a run: the run made or adopted, its budget
// held, its context and Job made.
#include <spdlog/spdlog.h>

#include "controllers/model/names.h"
#include "controllers/run/cache_projection.h"
#include "controllers/schedule/utc_time.h"
#include "controllers/shell/agent_reconciler.h"
#include "controllers/spend/pricing.h"
#include "kube/errors.h"

namespace hb::controllers {

namespace {

// An object of that name this run does not own: someone else's, never used.
kube::Error not_owned_by_run(const std::string& what, const std::string& ns,
                             const std::string& name, const std::string& run_name) {
  kube::Error error;
  error.message = what + " " + ns + "/" + name + " exists and is not owned by run " + run_name +
                  "; the operator never uses it for this run";
  error.context = "start run " + ns + "/" + run_name;
  return error;
}

// The slot's run name is held by a run that is not this Agent's.
kube::Error run_name_taken(const std::string& ns, const std::string& name) {
  kube::Error error;
  error.message = "HeartbeatRun " + ns + "/" + name +
                  " exists and is not this agent's; the slot's heartbeat is not started";
  error.context = "make run " + ns + "/" + name;
  return error;
}

// Not made yet: started Job first (run_after_job.h), made by the next pass.
bool made(const Json& run) {
  return !string_at(run, "metadata/uid").empty();
}

// The Job found under the run's Job name is this run's: controlled by it,
// or (the run not made yet) made before it, carrying it.
bool job_made_for(const Json& job, const Json& run) {
  if (made(run)) return owned_by(job, string_at(run, "metadata/uid"));
  return carries_run(job, run);
}

}  // namespace

kube::Done AgentReconciler::make_unless_made(Json& run) {
  if (made(run)) return kube::done();
  HB_TRY_ASSIGN(const RunMade made_now, make_run(run));
  if (made_now == RunMade::kNameTaken) {
    return run_name_taken(namespace_of(run), name_of(run));
  }
  return kube::done();
}

void AgentReconciler::stamp_policies(Json& run) const {
  Json& annotations = run["metadata"]["annotations"];
  if (!annotations.is_object()) annotations = Json::object();
  if (annotations.contains(kAnnotationPolicies)) return;
  annotations[kAnnotationPolicies] =
      policies_now(string_at(run, "metadata/namespace"), string_at(run, "spec/agentRef/name"));
}

kube::Result<Json> AgentReconciler::create_run(const std::string& ns, const Json& run) {
  Json stamped = run;
  stamp_policies(stamped);
  return writes_->create_run(ns, stamped);
}

kube::Result<bool> AgentReconciler::start_run(const Json& agent, const AgentSpec& spec, Json& run,
                                              const std::vector<const Json*>& history,
                                              const std::optional<Prompt>& read, TimePoint now) {
  const std::string ns = string_at(run, "metadata/namespace");
  const std::string run_name = name_of(run);
  std::optional<Prompt> resolved = read;
  if (!resolved) {
    HB_TRY_ASSIGN(resolved, resolve_prompt(agent));
  }
  const Prompt& prompt = *resolved;
  if (auto refusal = prompt_refusal(prompt.view())) {
    // A run someone asked for (or one queued before the prompt went away)
    // cannot start, saying what is missing.
    HB_TRY(fail_before_start(agent, run, *refusal, now));
    return true;
  }
  HB_TRY_ASSIGN(const std::string blocking, ensure_agent_objects(agent));
  if (!blocking.empty()) {
    {
      std::lock_guard lock(mutex_);
      in_the_way_[object_key(agent)] = {string_at(agent, "metadata/uid"), blocking, steady_()};
    }
    spdlog::warn("event=object_in_the_way agent={}/{} run={} object=\"{}\"", ns, name_of(agent),
                 run_name, blocking);
    HB_TRY(make_unless_made(run));  // it stays Queued
    return false;
  }
  if (!run_of_agent(run, string_at(agent, "metadata/uid"))) HB_TRY(adopt_run(agent, run_name));
  // The runner's per-run stops use the price the operator charges, the
  // token cap of the Agent and its policies, and what is held ahead for it.
  const std::vector<PolicySpec> policies = policies_over(ns, name_of(agent));
  const RunPrices prices{effective_pricing(spec, policies).pricing,
                         effective_per_run_tokens(spec, policies)};
  HB_TRY_ASSIGN(
      const HoldDecision hold,
      hold_budget(agent, run, spec,
                  run_worst_case_cents(spec, prices.pricing, prices.per_run_tokens.value_or(0)),
                  now));
  if (!hold.start) {
    {
      std::lock_guard lock(mutex_);
      waiting_for_budget_.insert(object_key(agent));
    }
    spdlog::info("event=run_waits_for_budget agent={}/{} run={} budget={}", ns, name_of(agent),
                 run_name, hold.waiting_on);
    HB_TRY(make_unless_made(run));  // it stays Queued
    return false;
  }
  // A run too large for its Job to carry (a tenant's many policies stamped
  // on it) is made first, and its Job made as for any stored run.
  const std::optional<std::string> to_make = made(run) ? std::nullopt : run_to_make_text(run);
  if (!made(run) && !to_make) HB_TRY(make_unless_made(run));
  HB_TRY_ASSIGN(std::optional<JobPlan> plan,
                plan_job(agent, spec, run, to_make, history, prompt, prices, hold, now));
  if (plan && plan->context_config_map && !made(run)) {
    // The context rides in a ConfigMap the run owns: the run first, then
    // the Job as for any stored run.
    HB_TRY(make_unless_made(run));
    HB_TRY_ASSIGN(plan,
                  plan_job(agent, spec, run, std::nullopt, history, prompt, prices, hold, now));
  }
  if (!plan) return true;  // failed before it started
  HB_TRY_ASSIGN(const StartedJob job, create_context_and_job(run, *plan));
  // The run's Running status is not written here: the dispatch path is the
  // run and its Job. The Job (in the overlay now, in the cache soon) is the
  // mark that the run started; the next pass, which the Job's watch event
  // queues behind other agents' dispatches, adopts it and writes Running
  // (observe_run), as after a crash between the two writes.
  if (job.created_at) note_started(agent, run, job);  // else adopted: counted when it was made
  return true;
}

// A run made with kubectl: this Agent's from now on, stamped with the
// policies selecting it (the run is the audit record: no ownerReference).
// Whatever annotations its author set for these two are replaced.
kube::Done AgentReconciler::adopt_run(const Json& agent, const std::string& run_name) {
  const std::string ns = namespace_of(agent);
  Json patch = {
      {"metadata",
       {{"annotations",
         {{kAnnotationAgentUid, string_at(agent, "metadata/uid")},
          {kAnnotationPolicies, policies_now(ns, name_of(agent))}}},
        {"labels",
         {{kLabelAgent, label_safe_name(name_of(agent))}, {kLabelManagedBy, kManagedByValue}}}}}};
  HB_TRY(writes_->adopt_run(ns, run_name, patch));
  return kube::done();
}

// The run's context rendered and its Job built; nullopt when the context is
// too large, the run then failed before it started.
kube::Result<std::optional<JobPlan>> AgentReconciler::plan_job(
    const Json& agent, const AgentSpec& spec, Json& run, const std::optional<std::string>& to_make,
    const std::vector<const Json*>& history, const Prompt& prompt, const RunPrices& prices,
    const HoldDecision& hold, TimePoint now) {
  const std::string ns = namespace_of(run);
  std::vector<EarlierRun> earlier = earlier_runs(history, name_of(run), spec.context_runs);
  HB_TRY_ASSIGN(const RereadRuns reread, reread_context_runs(ns, spec, name_of(run), earlier));
  if (!reread.empty()) {  // usually none
    earlier = earlier_runs(with_reread(history, reread), name_of(run), spec.context_runs);
  }
  StartingRun starting = starting_run(run);
  if (!made(run)) {
    HB_ASSERT_MSG(to_make.has_value(), "a run too large to carry is made before its Job");
    starting.to_make = *to_make;
  }
  RunStart start = plan_run_start({.spec = &spec,
                                   .run = &starting,
                                   .prompt = prompt.view(),
                                   .earlier = std::move(earlier),
                                   .hold = &hold,
                                   .spend = agent_spend(agent),
                                   .pricing = prices.pricing,
                                   .per_run_tokens = prices.per_run_tokens,
                                   .admitting_policies = policies_now(ns, name_of(agent)),
                                   .job = &config_.job,
                                   .now = now});
  if (auto* refusal = std::get_if<StartRefusal>(&start)) {
    budget_holds_.release(object_key(ns, name_of(run)));
    HB_TRY(fail_before_start(agent, run, *refusal, now));
    return std::optional<JobPlan>();
  }
  return std::optional<JobPlan>(std::get<JobPlan>(std::move(start)));
}

// A run whose Job this pass created: counted, its scheduling span exported,
// its lag observed.
void AgentReconciler::note_started(const Json& agent, const Json& run, const StartedJob& job) {
  HB_ASSERT_MSG(job.created_at.has_value(), "only a Job this pass created is counted");
  if (config_.export_span) {
    if (auto span = scheduling_span(run, {job.name, job.uid, *job.created_at})) {
      config_.export_span(std::move(*span));
    }
  }
  const std::string source = string_at(run, "spec/invocationSource", "manual");
  metrics_.counter_add("heartbeat_runs_started_total", {{"source", source}});
  // Lag as the issue defines it: the Job's creation (after its create call
  // returned) minus the slot, so the run and Job writes are included.
  auto slot = time_at(run, "spec/scheduledTime");
  if (slot && source == kSourceScheduler) {
    metrics_.observe("heartbeat_schedule_lag_seconds", {},
                     std::chrono::duration<double>(*job.created_at - *slot).count());
  }
  spdlog::info("event=run_started agent={}/{} run={} job={} source={}", namespace_of(run),
               name_of(agent), name_of(run), job.name, source);
}

// Finishes a run that cannot start without a Job (cost 0; the ledger marks
// it next time), saying why; the Agent's conditions name it (agent_conditions.h).
kube::Done AgentReconciler::fail_before_start(const Json& agent, Json& run,
                                              const StartRefusal& refusal, TimePoint now) {
  const Json status = failed_before_start_status(refusal, now);
  HB_TRY(make_unless_made(run));
  HB_TRY(write_run_status(run, status, true));
  spdlog::warn("event=run_not_started agent={}/{} run={} reason={}",
               string_at(run, "metadata/namespace"), name_of(agent), name_of(run), refusal.reason);
  return kube::done();
}

kube::Result<AgentReconciler::StartedJob> AgentReconciler::create_context_and_job(
    const Json& run, const JobPlan& plan) {
  const std::string ns = string_at(run, "metadata/namespace");
  const std::string run_uid = string_at(run, "metadata/uid");
  if (plan.context_config_map) {
    const std::string cm_name = name_of(*plan.context_config_map);
    HB_TRY_ASSIGN(const CreatedOrFound context,
                  writes_->create_context(ns, *plan.context_config_map));
    // Someone else's ConfigMap under this name would become the agent's context.
    if (!context.made && !owned_by(context.object, run_uid)) {
      return not_owned_by_run("ConfigMap", ns, cm_name, name_of(run));
    }
  }
  StartedJob job{name_of(plan.job), "", std::nullopt};
  HB_TRY_ASSIGN(CreatedOrFound created, writes_->create_job(ns, plan.job));
  if (created.made) {
    job.created_at = clock_();
  } else {
    if (!job_made_for(created.object, run)) {
      return not_owned_by_run("Job", ns, job.name, name_of(run));
    }
    // This run's own Job, made by an earlier pass: remembered as one made now is.
    Json seen = created.object;
    project_job(seen);  // the same shape the cache keeps
    overlay_.put(kOverlayJobs, std::move(seen));
  }
  job.uid = string_at(created.object, "metadata/uid");
  return job;
}

}  // namespace hb::controllers
