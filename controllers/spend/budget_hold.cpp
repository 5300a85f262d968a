#include "controllers/spend/budget_hold.h"

#include "api/hb_assert.h"
#include "controllers/model/names.h"

namespace hb::controllers {

namespace {

// Why a standing hold no longer holds; empty while it still does.
std::string_view release_cause(const BudgetHoldInput& in, const BudgetHold& hold) {
  HB_ASSERT_MSG(hold.holds(), "only a standing hold is released");
  const AgentSpec& spec = *in.spec;
  if (spec.budget_resume == BudgetResume::kNextPeriod) return kBudgetReleasedByPolicy;
  if (spec.monthly_budget_cents <= 0 || spec.monthly_budget_cents > hold.budget_cents) {
    return kBudgetReleasedByRaise;
  }
  if (resume_value_hash(in.resume) != hold.resume_hash) return kBudgetReleasedByAnnotation;
  return {};
}

std::string release_message(const BudgetHoldInput& in, const BudgetHold& hold,
                            std::string_view cause) {
  HB_ASSERT_MSG(!cause.empty(), "a released hold has its cause");
  const std::string stop = "the budget stop of " + hold.period + " (" +
                           std::to_string(hold.budget_cents) + " cents) is released: ";
  if (cause == kBudgetReleasedByPolicy) {
    return stop + "spec.budget.resume is NextPeriod, so it no longer waits for a person";
  }
  if (cause == kBudgetReleasedByRaise) {
    const int64_t budget = in.spec->monthly_budget_cents;
    return stop + (budget <= 0
                       ? std::string("spec.budget.monthlyCents no longer sets a limit")
                       : "spec.budget.monthlyCents was raised to " + std::to_string(budget));
  }
  return stop + "heartbeat.dev/resume was set to a new value";
}

// This month's spend has reached the budget and no hold stands for this
// stop yet. A hold released this month for the same (or a higher) budget
// was this very stop, acknowledged: it is not held again.
bool new_stop(const BudgetHoldInput& in, const std::optional<BudgetHold>& current) {
  HB_ASSERT_MSG(!current || current->holds() || current->period == in.period,
                "a hold released in another month was dropped first");
  const AgentSpec& spec = *in.spec;
  if (spec.budget_resume != BudgetResume::kManual || spec.monthly_budget_cents <= 0) return false;
  if (in.spent_cents_this_period < spec.monthly_budget_cents) return false;
  if (!current) return true;
  if (current->holds()) return false;
  return current->period != in.period || spec.monthly_budget_cents > current->budget_cents;
}

}  // namespace

std::string resume_value_hash(const std::optional<std::string>& resume) {
  return resume ? long_hash(*resume) : std::string();
}

BudgetHoldPlan plan_budget_hold(const BudgetHoldInput& in) {
  HB_ASSERT(in.spec != nullptr);
  BudgetHoldPlan plan;
  plan.hold = in.stored;
  if (plan.hold && plan.hold->holds()) {
    const std::string_view cause = release_cause(in, *plan.hold);
    if (!cause.empty()) {
      plan.events.push_back({EventTarget::kAgent, in.spec->name, false, kEventBudgetResumed,
                             release_message(in, *plan.hold, cause)});
      plan.hold->released_at = in.now;
      plan.hold->released_by = std::string(cause);
    }
  }
  // A released hold only matters in its own month (new_stop).
  if (plan.hold && !plan.hold->holds() && plan.hold->period != in.period) plan.hold.reset();
  if (new_stop(in, plan.hold)) {
    plan.hold = BudgetHold{in.period,    in.spec->monthly_budget_cents,
                           in.now,       resume_value_hash(in.resume),
                           std::nullopt, ""};
  }
  HB_ASSERT_MSG(!plan.hold || plan.hold->holds() || plan.hold->period == in.period,
                "a released hold is kept only in its own month");
  HB_ASSERT_MSG(plan.events.size() <= 1, "at most the one standing hold is released");
  return plan;
}

}  // namespace hb::controllers
