#include "controllers/policy/policy_status.h"

#include <cmath>

#include "api/contract_limits.h"
#include "api/hb_assert.h"
#include "controllers/model/agent_status.h"
#include "controllers/model/conditions.h"
#include "controllers/model/spend_ledger.h"
#include "controllers/schedule/blocks.h"
#include "controllers/schedule/spend_day.h"
#include "controllers/schedule/time_zone.h"
#include "controllers/spend/pricing.h"

namespace hb::controllers {

namespace {
struct WantedPolicyCondition {
  const char* type;
  bool status;
  std::string reason;
  std::string message;
};

// Paused only while the policy is valid: an invalid one holds nobody.
WantedPolicyCondition paused_policy_condition(const PolicySpec& policy, const PolicyTally& tally) {
  if (!policy.paused) {
    return {kConditionPaused, false, "NotPaused",
            "spec.paused is false; the policy holds no agent"};
  }
  if (!policy.valid()) {
    return {kConditionPaused, false, "InvalidSpec",
            "spec.paused is true but the policy is invalid (see Ready); it holds no agent"};
  }
  const std::string in_flight = policy.cancel_running
                                    ? "their runs in flight are cancelled (spec.cancelRunning)"
                                    : "their runs in flight finish";
  return {kConditionPaused, true, std::string(schedule::kReasonPolicyPaused),
          "spec.paused is true: none of the " + std::to_string(tally.agents) +
              " selected Agent(s) starts a heartbeat (scheduled, manual or callback); " +
              in_flight};
}

// kstatus's three, as the Agent has them: an invalid spec needs a person
// (Stalled, so Flux reads Failed, not Current); a status written for this
// generation is the operator's work done (Reconciling=False); Ready is
// neither stalled nor reconciling.
void add_kstatus_conditions(const PolicySpec& policy, std::vector<WantedPolicyCondition>& out) {
  std::string errors;
  for (const std::string& e : policy.errors) errors += (errors.empty() ? "" : "; ") + e;
  const std::string invalid = errors + "; no limit or price is in force";
  out.push_back(policy.valid()
                    ? WantedPolicyCondition{kConditionReady, true, "Valid",
                                            "the policy's limits and prices are in force"}
                    : WantedPolicyCondition{kConditionReady, false, "InvalidSpec", invalid});
  out.push_back(
      {kConditionReconciling, false, "Reconciled", "the operator has acted on this generation"});
  out.push_back(
      policy.valid()
          ? WantedPolicyCondition{kConditionStalled, false, "NotStalled", "nothing needs a person"}
          : WantedPolicyCondition{kConditionStalled, true, "InvalidSpec", invalid});
  HB_ASSERT_MSG(out[out.size() - 3].status != out.back().status,
                "a policy is Ready exactly when it is not Stalled");
}

// The month's team budget first, then the day's.
WantedPolicyCondition budget_condition(const PolicySpec& policy, const PolicyTally& tally) {
  const int64_t spent = static_cast<int64_t>(std::floor(tally.spent_cents));
  if (policy.valid() && policy.monthly_budget_cents > 0 && spent >= policy.monthly_budget_cents) {
    return {kConditionBudgetExceeded, true, std::string(schedule::kReasonPolicyBudgetExceeded),
            "the selected agents spent " + std::to_string(spent) + " of the " +
                std::to_string(policy.monthly_budget_cents) + " cents budgeted for " +
                tally.period + "; none of them starts a heartbeat"};
  }
  const int64_t today = static_cast<int64_t>(std::floor(tally.spent_today_cents));
  if (policy.valid() && policy.daily_budget_cents > 0 && today >= policy.daily_budget_cents) {
    return {kConditionBudgetExceeded, true, std::string(schedule::kReasonPolicyDailyBudgetExceeded),
            "the selected agents spent " + std::to_string(today) + " of the " +
                std::to_string(policy.daily_budget_cents) + " cents budgeted for " +
                std::string(schedule::day_of_key(tally.day)) + " (" +
                std::string(schedule::zone_of_key(tally.day)) +
                ", spec.budget.dailyCents); none of them starts a heartbeat until the next day"};
  }
  return {kConditionBudgetExceeded, false, "WithinBudget", "within the team budget"};
}

std::vector<WantedPolicyCondition> wanted_policy_conditions(const PolicySpec& policy,
                                                            const PolicyTally& tally) {
  std::vector<WantedPolicyCondition> out;
  add_kstatus_conditions(policy, out);
  out.push_back(paused_policy_condition(policy, tally));
  out.push_back(budget_condition(policy, tally));
  out.push_back(tally.agents == 0
                    ? WantedPolicyCondition{kConditionSelectorMatchesNothing, true, "NoAgents",
                                            "spec.selector selects no Agent of namespace " +
                                                policy.ns + "; check its labels"}
                    : WantedPolicyCondition{kConditionSelectorMatchesNothing, false,
                                            "AgentsSelected",
                                            std::to_string(tally.agents) + " Agent(s) selected"});
  HB_ASSERT_MSG(out.size() == 6, "every policy condition is said, each once");
  return out;
}

}  // namespace

Json desired_policy_status(const PolicySpec& policy, const Json* stored, const PolicyTally& tally,
                           TimePoint now) {
  HB_ASSERT_MSG(tally.agents >= 0 && tally.running_runs >= 0, "a tally counts");
  const Conditions existing =
      stored != nullptr ? parse_conditions(find_path(*stored, "conditions")) : nullptr;
  Json conditions = Json::array();
  for (const WantedPolicyCondition& w : wanted_policy_conditions(policy, tally)) {
    conditions.push_back(to_json(
        make_condition(existing, w.type, w.status, w.reason, w.message, policy.generation, now)));
  }
  Json spend = Json::object();
  spend.emplace("period", tally.period);
  spend.emplace("cents", round_to_spend_resolution(tally.spent_cents));
  Json status = Json::object();
  status.emplace("observedGeneration", policy.generation);
  status.emplace("agents", tally.agents);
  status.emplace("runningRuns", tally.running_runs);
  status.emplace("spend", std::move(spend));
  if (!tally.day.empty()) {
    status.emplace("spendToday",
                   Json{{"day", std::string(schedule::day_of_key(tally.day))},
                        {"timeZone", std::string(schedule::zone_of_key(tally.day))},
                        {"cents", round_to_spend_resolution(tally.spent_today_cents)}});
  }
  status.emplace("conditions", std::move(conditions));
  return status;
}

}  // namespace hb::controllers
