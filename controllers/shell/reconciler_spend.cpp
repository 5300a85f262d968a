// The AgentReconciler's money: budget held ahead of a start, restored after a
// restart, and charges recorded in the durable ledger.
#include <spdlog/spdlog.h>

#include <algorithm>

#include "controllers/model/names.h"
#include "controllers/schedule/spend.h"
#include "controllers/schedule/spend_day.h"
#include "controllers/schedule/time_zone.h"
#include "controllers/shell/agent_reconciler.h"
#include "kube/errors.h"

namespace hb::controllers {

kube::Result<HoldDecision> AgentReconciler::hold_budget(const Json& agent, const Json& run,
                                                        const AgentSpec& spec,
                                                        double worst_case_cents, TimePoint now) {
  const std::string ns = namespace_of(agent);
  const std::string agent_key = object_key(agent);
  HB_TRY_ASSIGN(const std::optional<LedgerRecord> record,
                ledger_record(ns, name_of(agent), nullptr, now));
  AgentBudgetFigures own{spec.monthly_budget_cents, 0, spec.daily_budget_cents, 0};
  if (record) {
    own.spent_month_cents = spend_in(*record, schedule::spend_period(now)).cents;
    own.spent_today_cents = spend_on_day(*record, schedule::spend_day(now, spec.time_zone));
  }
  const std::vector<schedule::PolicyBudget> teams =
      config_.policies ? config_.policies->budgets_for(agent_key, now)
                       : std::vector<schedule::PolicyBudget>{};
  if (!budget_holds_.restored()) restore_budget_holds();
  return budget_holds_.take(object_key(run), agent_key, budget_rooms(agent_key, own, teams),
                            worst_case_cents);
}

void AgentReconciler::restore_budget_hold(const Json& run, const Json* job) {
  if (job == nullptr || !job_of_run(*job, run) || bool_at(run, "status/costRecorded")) return;
  const std::optional<double> held = held_cents_of_job(*job);
  if (!held) return;
  const std::string ns = namespace_of(run);
  const std::string agent_key = object_key(ns, string_at(run, "spec/agentRef/name"));
  budget_holds_.restore(
      object_key(run),
      {agent_key, hold_pools(agent_key, ns, admitting_policies_of(run, job)), *held});
}

void AgentReconciler::restore_budget_holds() {
  view_.for_each_agent([this](const Json& agent) {
    const std::string ns = namespace_of(agent);
    for (const Json& run : view_.runs_of(ns, name_of(agent))) {
      const std::string job_name = job_name_for_run(name_of(run));
      const std::optional<Json> job =
          overlay_.merge(kOverlayJobs, object_key(ns, job_name), view_.job(ns, job_name));
      restore_budget_hold(run, job ? &*job : nullptr);
    }
  });
  budget_holds_.restored_all();
}

kube::Done AgentReconciler::charge_ledger(const std::string& ns, const std::string& name,
                                          LedgerRecord record, std::vector<LedgerCharge> charges,
                                          const std::vector<const Json*>& runs,
                                          const date::time_zone* agent_zone, TimePoint now) {
  // Charged under the policies that admitted the run (the decision read
  // them from its final status) and those selecting the agent now.
  const std::vector<std::string> selecting =
      config_.policies ? config_.policies->policies_selecting(object_key(ns, name))
                       : std::vector<std::string>{};
  for (LedgerCharge& charge : charges) {
    charge.policies.insert(charge.policies.end(), selecting.begin(), selecting.end());
    std::sort(charge.policies.begin(), charge.policies.end());
    charge.policies.erase(std::unique(charge.policies.begin(), charge.policies.end()),
                          charge.policies.end());
  }
  stamp_days(charges, agent_zone, [&](const std::string& policy) {
    return config_.policies ? config_.policies->zone_of(object_key(ns, policy)) : nullptr;
  });
  const auto still_unmarked = [&runs](const std::string& run) {
    return std::any_of(runs.begin(), runs.end(), [&run](const Json* r) {
      return name_of(*r) == run && !bool_at(*r, "status/costRecorded");
    });
  };
  const std::vector<LedgerCharge> first = first_charges(record, charges);
  LedgerRecord next = charge_runs(forget_marked(std::move(record), still_unmarked), charges, now);
  kube::RequestPriorityScope lifecycle(kube::RequestClass::kLifecycle);
  HB_TRY(config_.ledger->put(next));
  count_write(kWriteLedger);
  for (const LedgerCharge& charge : charges) budget_holds_.release(object_key(ns, charge.run));
  observe_gen_ai_charges(genai_, view_, ns, name, first);
  for (const LedgerCharge& charge : charges) {
    spdlog::info("event=ledger_charged agent={}/{} run={} cost_cents={:.6f} policies={}", ns, name,
                 charge.run, charge.cost_cents, policies_annotation(charge.policies));
  }
  return kube::done();
}

}  // namespace hb::controllers
