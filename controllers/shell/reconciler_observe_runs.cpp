// The AgentReconciler observing an agent's runs and its orphans from the
// caches (observe_run is pure).
#include <algorithm>

#include "controllers/model/names.h"
#include "controllers/pod/job_pods.h"
#include "controllers/schedule/spend.h"
#include "controllers/shell/agent_reconciler.h"
#include "controllers/spend/pricing.h"

namespace hb::controllers {

namespace {

// What every run of the agent is observed against: its spec's timeouts,
// prices and bounds, and where its budgets and policies stand.
RunObservationInput shared_observation_input(const AgentView& agent,
                                             const std::vector<schedule::PolicyBudget>& policies,
                                             const std::vector<PolicySpec>& selecting,
                                             const LedgerRecord* ledger,
                                             std::chrono::seconds stall_window, TimePoint now) {
  const AgentSpec& spec = agent.spec.spec;
  RunObservationInput in;
  in.timeouts.timeout = std::chrono::seconds(spec.timeout_seconds);
  in.timeouts.grace = std::chrono::seconds(spec.grace_seconds);
  in.timeouts.stall_window = std::max(stall_window, api::kRunStallWindowMin);
  const EffectivePricing pricing = effective_pricing(spec, selecting);
  in.pricing = pricing.pricing;
  in.pricing_source = pricing.source;
  in.pricing_policy = pricing.policy;
  in.per_run_tokens = effective_per_run_tokens(spec, selecting);
  in.provider = spec.provider;
  in.model = spec.model;
  in.bounds = usage_bounds(spec);
  in.budget_exceeded = monthly_budget_spent(agent, now, ledger);
  in.daily_budget_exceeded = daily_budget_spent(spec, now, ledger);
  const schedule::PolicyBudget* cancelling = schedule::cancelling_policy(policies);
  in.cancelled_by_policy = cancelling ? schedule::policy_key(*cancelling) : "";
  const schedule::PolicyBudget* stopping = schedule::budget_stopping_policy(policies, now);
  in.stopped_by_team_budget = stopping ? schedule::policy_key(*stopping) : "";
  in.team_budget_daily = stopping != nullptr &&
                         (stopping->budget_cents <= 0 ||
                          schedule::spend_in_current_period(stopping->period, stopping->spent_cents,
                                                            now) < stopping->budget_cents);
  in.pause_allowed = pause_allowed(spec);
  in.archival_claim = spec.archival_claim;
  in.idle_token = idle_token(spec.idle_backoff);
  in.now = now;
  return in;
}

}  // namespace

// Every run observed from the caches and the agent's Lease (observe_run is pure).
AgentReconciler::ObservedRuns AgentReconciler::observe_runs(
    const std::string& ns, const std::string& name, const std::vector<Json>& runs,
    const AgentViews& views, const std::vector<schedule::PolicyBudget>& policies,
    const std::vector<PolicySpec>& selecting, const LedgerRecord* ledger, TimePoint now) {
  HB_ASSERT_MSG(views.runs.size() == runs.size(), "a view for every run");
  ObservedRuns observed;
  observed.lease = view_.lease(ns, lease_name_for_agent(name));
  const std::optional<Json>& lease = observed.lease;
  RunObservationInput shared = shared_observation_input(*views.agent, policies, selecting, ledger,
                                                        config_.job.stall_window, now);
  shared.lease = lease ? &*lease : nullptr;
  shared.lease_seen_at = lease_seen_at(object_key(ns, name), lease, views, now);
  const RunJobs jobs = jobs_of_runs(ns, runs, views);
  const std::vector<TimePoint> going_on_seen =
      lease_sightings_.runs_seen_at(object_key(ns, name), jobs.going_on, now);
  keep_holds_of_uncharged(ns, name, runs, jobs.jobs);
  for (size_t i = 0; i < runs.size(); ++i) {
    const std::optional<Json>& job = jobs.jobs[i];
    const std::vector<Json> pods =
        is_settled(*views.runs[i])
            ? std::vector<Json>{}
            : pods_of_job(view_.pods_of(ns, name_of(runs[i])),
                          job_uid_of(job ? &*job : nullptr, views.runs[i]->job_uid));
    RunObservationInput in = shared;
    in.run = &runs[i];
    in.view = views.runs[i];
    in.job = job ? &*job : nullptr;
    for (const Json& p : pods) in.pods.push_back(&p);
    in.admitting_policies = admitting_policies_of(runs[i], in.job);
    in.reported_high = view_.reported_usage(ns, name_of(runs[i]));
    if (jobs.going_on_at[i]) in.run_seen_at = going_on_seen[*jobs.going_on_at[i]];
    observed.runs.push_back(observe_run(in));
    observed.has_job.push_back(job.has_value());
  }
  return observed;
}

// When the Lease's version was first seen; only a run that is not final
// reads it (otherwise the sighting is forgotten).
std::optional<TimePoint> AgentReconciler::lease_seen_at(const std::string& agent_key,
                                                        const std::optional<Json>& lease,
                                                        const AgentViews& views, TimePoint now) {
  const bool any_unfinished = std::any_of(views.runs.begin(), views.runs.end(),
                                          [](const auto& run) { return !is_final(run->phase); });
  if (lease && any_unfinished) {
    return lease_sightings_.seen_at(agent_key, string_at(*lease, "metadata/resourceVersion"), now);
  }
  lease_sightings_.forget_lease(agent_key);
  return std::nullopt;
}

// Each run's Job from the cache (none for a settled run, which decides
// nothing from its Job or Pods: the cache lets them go), and the unfinished
// runs with a Job.
AgentReconciler::RunJobs AgentReconciler::jobs_of_runs(const std::string& ns,
                                                       const std::vector<Json>& runs,
                                                       const AgentViews& views) {
  RunJobs out;
  out.going_on_at.resize(runs.size());
  for (size_t i = 0; i < runs.size(); ++i) {
    if (is_settled(*views.runs[i])) {
      out.jobs.emplace_back();
      continue;
    }
    const std::string job_name = job_name_for_run(name_of(runs[i]));
    out.jobs.push_back(
        overlay_.merge(kOverlayJobs, object_key(ns, job_name), view_.job(ns, job_name)));
    if (out.jobs.back() && !is_final(views.runs[i]->phase)) {
      out.going_on_at[i] = out.going_on.size();
      out.going_on.push_back(name_of(runs[i]));
    }
  }
  return out;
}

// Money stays held for a run till it is charged (charge_ledger), or gone.
void AgentReconciler::keep_holds_of_uncharged(const std::string& ns, const std::string& name,
                                              const std::vector<Json>& runs,
                                              const std::vector<std::optional<Json>>& jobs) {
  std::set<std::string> uncharged;
  for (size_t i = 0; i < runs.size(); ++i) {
    if (bool_at(runs[i], "status/costRecorded")) continue;
    uncharged.insert(object_key(ns, name_of(runs[i])));
    restore_budget_hold(runs[i], jobs[i] ? &*jobs[i] : nullptr);
  }
  budget_holds_.keep_only(object_key(ns, name), uncharged);
}

// Each orphan as the caches show it (observe_run is pure).
std::vector<OrphanRun> AgentReconciler::observe_orphans(const std::string& ns,
                                                        const std::vector<Json>& runs,
                                                        TimePoint now) {
  std::vector<OrphanRun> observed;
  observed.reserve(runs.size());
  for (const Json& run : runs) {
    const std::string job_name = job_name_for_run(name_of(run));
    auto job = overlay_.merge(kOverlayJobs, object_key(ns, job_name), view_.job(ns, job_name));
    std::vector<Json> pods =
        pods_of_job(view_.pods_of(ns, name_of(run)),
                    job_uid_of(job ? &*job : nullptr, string_at(run, "status/jobUID")));
    RunObservationInput in;
    in.run = &run;
    in.job = job ? &*job : nullptr;
    for (const Json& p : pods) in.pods.push_back(&p);
    in.admitting_policies = admitting_policies_of(run, in.job);
    in.agent_missing = true;
    in.now = now;
    OrphanRun orphan;
    orphan.run = &run;
    orphan.observed = observe_run(in);
    orphan.has_job = job.has_value();
    orphan.admitting_policies = std::move(in.admitting_policies);
    observed.push_back(std::move(orphan));
  }
  return observed;
}

}  // namespace hb::controllers
