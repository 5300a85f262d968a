// The AgentReconciler tending runs whose Agent is gone: planned
// (orphan_plan.h), one API call a step.
#include <spdlog/spdlog.h>

#include "controllers/model/names.h"
#include "controllers/plan/orphan_plan.h"
#include "controllers/shell/agent_reconciler.h"
#include "kube/errors.h"

namespace hb::controllers {

// One API call; decides nothing (plan_orphans did).
kube::Done AgentReconciler::perform_orphan_step(const std::string& ns, const std::string& name,
                                                const OrphanStep& step, std::vector<Json>& runs,
                                                TimePoint now) {
  switch (step.kind) {
    case OrphanStepKind::kDeleteJob:
      return delete_job(ns, job_name_for_run(step.run));
    case OrphanStepKind::kChargeLedger: {
      std::vector<const Json*> all;
      for (const Json& r : runs) all.push_back(&r);
      return charge_ledger(ns, name, step.record, step.charges, all, step.agent_zone, now);
    }
    case OrphanStepKind::kMarkFinal: {
      Json* run = find_named(runs, step.run);
      HB_ASSERT_MSG(run != nullptr, "a mark names one of the orphans planned");
      HB_TRY(write_run_status(*run, step.status, true));
      spdlog::info("event=run_finished agent={}/{} run={} phase={} reason=AgentNotFound", ns, name,
                   step.run, string_at(step.status, "phase"));
      return kube::done();
    }
    case OrphanStepKind::kDeleteRun: {
      kube::RequestPriorityScope bookkeeping(kube::RequestClass::kBookkeeping);
      HB_TRY(delete_run(ns, step.run));
      spdlog::info("event=run_retention_expired agent={}/{} run={} retention_seconds={}", ns, name,
                   step.run, config_.run_retention.count());
      return kube::done();
    }
  }
  HB_ASSERT_MSG(false, "every orphan step kind is performed above");
  return kube::done();
}

kube::Result<std::optional<TimePoint>> AgentReconciler::tend_orphans(const std::string& ns,
                                                                     const std::string& name,
                                                                     std::vector<Json>& orphans,
                                                                     TimePoint now) {
  if (orphans.empty()) return std::optional<TimePoint>();
  const std::vector<OrphanRun> observed = observe_orphans(ns, orphans, now);
  std::optional<LedgerRecord> record;
  if (orphans_need_ledger(observed)) {
    HB_TRY_ASSIGN(record, ledger_record(ns, name, nullptr, now));
  }
  OrphanPlanInput input;
  input.runs = &observed;
  input.ledger = record ? &*record : nullptr;
  input.retention = config_.run_retention;
  input.now = now;
  const OrphanPlan plan = plan_orphans(input);
  for (const OrphanStep& step : plan.steps) {
    HB_TRY(perform_orphan_step(ns, name, step, orphans, now));
  }
  return plan.next_retention_at;
}

}  // namespace hb::controllers
