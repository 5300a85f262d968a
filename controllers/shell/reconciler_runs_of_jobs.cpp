// The AgentReconciler making the runs of Jobs made before them
// (run_after_job.h): before a pass decides, each Job awaiting its run gets
// it (made, or found made) and is handed to it, one API call a step.
#include <spdlog/spdlog.h>

#include "controllers/model/names.h"
#include "controllers/run/run_after_job.h"
#include "controllers/run/run_record.h"
#include "controllers/shell/agent_reconciler.h"
#include "kube/errors.h"

namespace hb::controllers {

namespace {

// A run create's place in the rate limiter (write_plan.h), by its slot.
kube::RequestPriority run_create_priority(const Json& run, TimePoint now) {
  PlannedWrite create;
  create.op = WriteOp::kCreateRun;
  return write_priority(create, false, time_at(run, "spec/scheduledTime"), now);
}

}  // namespace

std::vector<Json> AgentReconciler::jobs_awaiting_run(const std::string& ns,
                                                     const std::string& agent) {
  std::vector<Json> jobs = overlay_.merge_list(
      kOverlayJobs, object_key(ns, agent), view_.jobs_awaiting_run(ns, agent),
      [&](const Json& job) {
        return namespace_of(job) == ns && annotation_at(job, kAnnotationAgentName) == agent;
      });
  std::erase_if(jobs, [](const Json& job) { return !awaits_its_run(job); });
  return jobs;
}

kube::Result<std::vector<AgentReconciler::HandOver>> AgentReconciler::make_runs_of_jobs(
    const std::string& ns, const std::string& agent, std::vector<Json>& runs) {
  const std::vector<Json> jobs = jobs_awaiting_run(ns, agent);
  std::vector<HandOver> handovers;
  if (jobs.empty()) return handovers;
  for (const JobRunStep& step : plan_runs_for_jobs(jobs, runs)) {
    if (step.kind != JobRunStepKind::kHandOver) {
      HB_TRY(perform_job_run_step(ns, step, runs));
      continue;
    }
    // The run as stored now: a run made (or found) above has its uid.
    const Json* run = find_named(runs, step.run_name);
    if (run == nullptr || string_at(*run, "metadata/uid").empty()) continue;
    handovers.push_back({step.job, job_handover_patch(*run)});
  }
  return handovers;
}

kube::Done AgentReconciler::hand_over_jobs(const std::string& ns,
                                           const std::vector<HandOver>& handovers) {
  kube::RequestPriorityScope bookkeeping(kube::RequestClass::kBookkeeping);
  for (const HandOver& handover : handovers) {
    HB_TRY(writes_->hand_over_job(ns, handover.job, handover.patch));
  }
  return kube::done();
}

// One API call (a run create that finds the name another's: its Job
// deleted too); a made run joins `runs`.
kube::Done AgentReconciler::perform_job_run_step(const std::string& ns, const JobRunStep& step,
                                                 std::vector<Json>& runs) {
  switch (step.kind) {
    case JobRunStepKind::kMakeRun: {
      // Its slot's dispatch, after that slot's Jobs: under a saturated
      // limiter an older slot's run goes before a newer slot's Job, and a
      // worker making it is not held behind every other dispatch.
      kube::RequestPriorityScope dispatch(run_create_priority(step.run, clock_()));
      Json run = step.run;
      HB_TRY_ASSIGN(const RunMade made, make_run(run));
      if (made == RunMade::kNameTaken) {
        HB_TRY(delete_job(ns, step.job));
        spdlog::warn("event=run_name_taken run={}/{} job={}", ns, step.run_name, step.job);
        return kube::done();
      }
      runs.push_back(std::move(run));
      return kube::done();
    }
    case JobRunStepKind::kHandOver:
      HB_ASSERT_MSG(false, "a hand-over waits for the pass's own writes (hand_over_jobs)");
      return kube::done();
    case JobRunStepKind::kDeleteJob: {
      kube::RequestPriorityScope bookkeeping(kube::RequestClass::kBookkeeping);
      HB_TRY(delete_job(ns, step.job));
      spdlog::warn("event=job_without_its_run job={}/{} reason=\"its run is not this agent's\"", ns,
                   step.job);
      return kube::done();
    }
  }
  HB_ASSERT_MSG(false, "every step kind is performed above");
  return kube::done();
}

// Makes `run` (made after its Job, or in place of a start that did not make
// one): unless its name is taken, `run` becomes the stored run.
kube::Result<AgentReconciler::RunMade> AgentReconciler::make_run(Json& run) {
  const std::string ns = namespace_of(run);
  HB_TRY_ASSIGN(CreatedOrFound created, writes_->create_or_find_run(ns, run));
  const std::string agent_uid(annotation_at(run, kAnnotationAgentUid));
  if (!created.made && !run_of_agent(created.object, agent_uid)) return RunMade::kNameTaken;
  if (created.made) {
    spdlog::info("event=run_created agent={}/{} run={} slot={}", ns,
                 string_at(run, "spec/agentRef/name"), name_of(run),
                 string_at(run, "spec/scheduledTime"));
  } else {
    overlay_.put(kOverlayRuns, created.object);  // read-your-writes, as for a run made here
  }
  run = std::move(created.object);
  return RunMade::kOurs;
}

}  // namespace hb::controllers
