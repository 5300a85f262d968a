#include "controllers/plan/orphan_plan.h"

#include <algorithm>
#include <utility>

#include "api/hb_assert.h"
#include "controllers/model/run_view.h"
#include "controllers/model/spend_ledger.h"
#include "controllers/run/run_record.h"
#include "controllers/schedule/time_zone.h"

namespace hb::controllers {
namespace {

OrphanStep run_step(OrphanStepKind kind, std::string run) {
  OrphanStep step;
  step.kind = kind;
  step.run = std::move(run);
  HB_ASSERT_MSG(!step.run.empty() && kind != OrphanStepKind::kChargeLedger,
                "a run step names its run");
  return step;
}

LedgerCharge charge_of(const OrphanRun& orphan, TimePoint now) {
  const Json& status = orphan.observed.status;
  const RunUsage usage = usage_from_status(status);
  LedgerCharge charge;
  charge.run = name_of(*orphan.run);
  charge.cost_cents = usage.cost_cents;
  charge.input_tokens = usage.input_tokens;
  charge.output_tokens = usage.output_tokens;
  charge.finished_at = time_at(status, "finishedAt").value_or(now);
  charge.admitted_at = time_at(status, "startedAt");
  charge.policies = orphan.admitting_policies;
  charge.call_durations = call_durations_from_status(status);
  HB_ASSERT_MSG(orphan.observed.became_final, "only a run that became final is charged");
  return charge;
}

// The final status as written: costRecorded, and with a ledger the cost it
// keeps. A run charged before (its mark did not land) keeps what it was
// charged: the ledger never lowers a charge, so neither does the run.
Json marked_status(const OrphanRun& orphan, const LedgerRecord* ledger) {
  Json status = orphan.observed.status;
  if (ledger != nullptr) {
    const double charged = charged_cents(counted_entries(*ledger), name_of(*orphan.run), 0);
    if (charged > usage_from_status(status).cost_cents) status["usage"]["costCents"] = charged;
  }
  status["costRecorded"] = true;
  HB_ASSERT_MSG(ledger == nullptr || usage_from_status(status).cost_cents >=
                                         usage_from_status(orphan.observed.status).cost_cents,
                "a mark never lowers the cost the run shows");
  return status;
}

// Each run as it stands once its mark is written: retention reads those.
std::vector<Json> runs_after_marks(const std::vector<OrphanRun>& runs,
                                   const std::vector<OrphanStep>& steps) {
  std::vector<Json> after;
  after.reserve(runs.size());
  for (const OrphanRun& orphan : runs) after.push_back(*orphan.run);
  for (const OrphanStep& step : steps) {
    if (step.kind != OrphanStepKind::kMarkFinal) continue;
    auto it = std::find_if(after.begin(), after.end(),
                           [&step](const Json& run) { return name_of(run) == step.run; });
    HB_ASSERT(it != after.end());
    (*it)["status"] = step.status;
  }
  return after;
}

OrphanStep charge_step(const std::vector<const OrphanRun*>& finished, const LedgerRecord& ledger,
                       TimePoint now) {
  OrphanStep step;
  step.kind = OrphanStepKind::kChargeLedger;
  step.record = ledger;
  for (const OrphanRun* orphan : finished) step.charges.push_back(charge_of(*orphan, now));
  // A run charged after its Agent is gone counts in the day the Agent counted in.
  step.agent_zone = schedule::find_time_zone(agent_zone_in(ledger)).value.value_or(nullptr);
  HB_ASSERT_MSG(step.charges.size() == finished.size(), "each run that became final, once");
  return step;
}

}  // namespace

bool orphans_need_ledger(const std::vector<OrphanRun>& runs) {
  return std::any_of(runs.begin(), runs.end(),
                     [](const OrphanRun& orphan) { return orphan.observed.became_final; });
}

OrphanPlan plan_orphans(const OrphanPlanInput& input) {
  HB_ASSERT(input.runs != nullptr);
  const std::vector<OrphanRun>& runs = *input.runs;
  OrphanPlan plan;
  std::vector<const OrphanRun*> finished;
  for (const OrphanRun& orphan : runs) {
    HB_ASSERT(orphan.run != nullptr);
    if (orphan.observed.delete_job && orphan.has_job) {
      plan.steps.push_back(run_step(OrphanStepKind::kDeleteJob, name_of(*orphan.run)));
    }
    if (orphan.observed.became_final) finished.push_back(&orphan);
  }
  // Charged before the mark: deleting an Agent while its run goes on does
  // not make the run free.
  if (input.ledger != nullptr && !finished.empty()) {
    plan.steps.push_back(charge_step(finished, *input.ledger, input.now));
  }
  for (const OrphanRun* orphan : finished) {
    HB_ASSERT(is_final(orphan->observed.phase));
    OrphanStep mark = run_step(OrphanStepKind::kMarkFinal, name_of(*orphan->run));
    mark.status = marked_status(*orphan, input.ledger);
    plan.steps.push_back(std::move(mark));
  }
  const RetentionPlan retention =
      plan_retention(runs_after_marks(runs, plan.steps), input.retention, input.now);
  for (const std::string& run : retention.due) {
    plan.steps.push_back(run_step(OrphanStepKind::kDeleteRun, run));
  }
  plan.next_retention_at = retention.next_at;
  HB_ASSERT_MSG(std::is_sorted(plan.steps.begin(), plan.steps.end(),
                               [](const OrphanStep& a, const OrphanStep& b) {
                                 return static_cast<int>(a.kind) < static_cast<int>(b.kind);
                               }),
                "Jobs are deleted, then charges made, then marks, then retention deletes");
  return plan;
}

}  // namespace hb::controllers
