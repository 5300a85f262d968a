#include "controllers/schedule/blocks.h"

#include "api/hb_assert.h"
#include "controllers/schedule/spend.h"

namespace hb::schedule {

namespace {

std::string held_message(const HeldBudgetStop& hold, int64_t spent, TimePoint now) {
  const std::string budget = std::to_string(hold.budget_cents);
  const std::string what =
      hold.period == spend_period(now)
          ? "spent " + std::to_string(spent) + " of the " + budget + " cents budgeted for " +
                hold.period
          : "the " + budget + " cents budgeted for " + hold.period + " were spent";
  return what + "; heartbeats stay stopped until a person raises spec.budget.monthlyCents above " +
         budget +
         " or sets the heartbeat.dev/resume annotation to a new value (spec.budget.resume: "
         "Manual)";
}

// Spend counted for a day that has ended counts as 0.
int64_t spent_in_day(int64_t spent, TimePoint day_ends, TimePoint now) {
  return now < day_ends ? spent : 0;
}

void add_daily_budget_block(const BlockInput& input, TimePoint now, BlockResult& result) {
  const int64_t spent = spent_in_day(input.spent_cents_today, input.day_ends, now);
  if (input.daily_budget_cents <= 0 || spent < input.daily_budget_cents) return;
  result.blocks.push_back(
      {std::string(kReasonBudgetExceeded),
       "spent " + std::to_string(spent) + " of the " + std::to_string(input.daily_budget_cents) +
           " cents budgeted for today (spec.budget.dailyCents); heartbeats "
           "resume at " +
           format_rfc3339(input.day_ends) + " or when spec.budget.dailyCents is raised",
       kReasonDailyBudgetExceeded});
  result.budget_resets_at = input.day_ends;
  HB_ASSERT_MSG(input.day_ends > now, "a spent day blocks only until it ends");
}

bool team_day_spent(const PolicyBudget& p, TimePoint now) {
  return p.daily_budget_cents > 0 &&
         spent_in_day(p.spent_today_cents, p.day_ends, now) >= p.daily_budget_cents;
}

void add_budget_block(const BlockInput& input, TimePoint now, BlockResult& result) {
  const int64_t spent =
      spend_in_current_period(input.spend_period, input.spent_cents_this_period, now);
  if (input.budget_hold) {
    result.blocks.push_back({std::string(kReasonBudgetExceeded),
                             held_message(*input.budget_hold, spent, now),
                             kReasonAwaitingApproval});
    result.until_a_person_acts = true;
    HB_ASSERT_MSG(!result.budget_resets_at, "a held stop waits for a person, not a date");
    return;
  }
  if (input.monthly_budget_cents <= 0 || spent < input.monthly_budget_cents) {
    add_daily_budget_block(input, now, result);
    return;
  }
  const TimePoint resets = start_of_next_period(now);
  result.blocks.push_back(
      {std::string(kReasonBudgetExceeded),
       "spent " + std::to_string(spent) + " of the " + std::to_string(input.monthly_budget_cents) +
           " cents budgeted for " + spend_period(now) + "; heartbeats resume at " +
           format_rfc3339(resets) + " or when spec.budget.monthlyCents is raised"});
  result.budget_resets_at = resets;
  HB_ASSERT_MSG(resets > now, "a spent month blocks only until the next begins");
}

Block team_day_block(const PolicyBudget& p, TimePoint now) {
  HB_ASSERT_MSG(p.daily_budget_cents > 0 && now < p.day_ends,
                "called only for a team whose running day is spent");
  return Block{std::string(kReasonBudgetExceeded),
               "the agents of HeartbeatPolicy " + p.policy + " spent " +
                   std::to_string(spent_in_day(p.spent_today_cents, p.day_ends, now)) + " of the " +
                   std::to_string(p.daily_budget_cents) +
                   " cents budgeted for a day (the policy's spec.budget.dailyCents); heartbeats "
                   "resume at " +
                   format_rfc3339(p.day_ends) + " or when it is raised",
               kReasonPolicyDailyBudgetExceeded};
}

// The first policy by name whose month, then whose day, is spent; with
// when it lifts.
std::optional<std::pair<Block, TimePoint>> policy_budget_block(const BlockInput& input,
                                                               TimePoint now) {
  for (const PolicyBudget& p : input.policy_budgets) {
    const int64_t spent = spend_in_current_period(p.period, p.spent_cents, now);
    if (p.budget_cents <= 0 || spent < p.budget_cents) continue;
    return std::pair{
        Block{std::string(kReasonBudgetExceeded),
              "the agents of HeartbeatPolicy " + p.policy + " spent " + std::to_string(spent) +
                  " of the " + std::to_string(p.budget_cents) + " cents budgeted for " +
                  spend_period(now) + "; heartbeats resume at " +
                  format_rfc3339(start_of_next_period(now)) +
                  " or when the policy's spec.budget.monthlyCents is raised",
              kReasonPolicyBudgetExceeded},
        start_of_next_period(now)};
  }
  for (const PolicyBudget& p : input.policy_budgets) {
    if (!team_day_spent(p, now)) continue;
    HB_ASSERT_MSG(p.day_ends > now, "a team's spent day blocks only until it ends");
    return std::pair{team_day_block(p, now), p.day_ends};
  }
  return std::nullopt;
}

}  // namespace

const PolicyBudget* pausing_policy(const std::vector<PolicyBudget>& policies) {
  for (const PolicyBudget& p : policies) {
    if (p.paused) return &p;
  }
  return nullptr;
}

const PolicyBudget* cancelling_policy(const std::vector<PolicyBudget>& policies) {
  for (const PolicyBudget& p : policies) {
    if (p.paused && p.cancel_running) {
      HB_ASSERT(pausing_policy(policies) != nullptr);
      return &p;
    }
  }
  return nullptr;
}

const PolicyBudget* budget_stopping_policy(const std::vector<PolicyBudget>& policies,
                                           TimePoint now) {
  for (const PolicyBudget& p : policies) {
    if (p.finish_on_exceeded) continue;
    if (p.budget_cents > 0 &&
        spend_in_current_period(p.period, p.spent_cents, now) >= p.budget_cents)
      return &p;
    if (team_day_spent(p, now)) return &p;
  }
  return nullptr;
}

std::string policy_key(const PolicyBudget& policy) {
  return policy.ns.empty() ? policy.policy : policy.ns + "/" + policy.policy;
}

bool BlockResult::has(std::string_view reason) const {
  for (const Block& b : blocks) {
    if (b.reason == reason) return true;
  }
  return false;
}

BlockResult evaluate_blocks(const BlockInput& input, TimePoint now) {
  BlockResult result;
  result.blocks = input.policy_refusals;
  if (const PolicyBudget* policy = pausing_policy(input.policy_budgets)) {
    result.blocks.push_back(
        {std::string(kReasonPolicyPaused),
         "HeartbeatPolicy " + policy_key(*policy) +
             " is paused (spec.paused); no heartbeat starts, scheduled, manual or callback, "
             "until the policy's spec.paused is set to false"});
    result.until_a_person_acts = true;
  }
  if (result.blocked()) result.until_a_person_acts = true;
  if (input.paused) {
    result.blocks.push_back(
        {std::string(kReasonPaused),
         "spec.paused is true; no scheduled heartbeats until it is set to false"});
  }
  if (input.paused_until && *input.paused_until > now) {
    result.blocks.push_back({std::string(kReasonPausedByAgent),
                             "the agent paused its heartbeats (pause_heartbeats) until " +
                                 format_rfc3339(*input.paused_until)});
    result.paused_until_lifts_at = *input.paused_until;
  }
  if (input.provider_hold && input.provider_hold->until > now) {
    result.blocks.push_back({std::string(kReasonProviderThrottled),
                             input.provider_hold->message + "; heartbeats resume at " +
                                 format_rfc3339(input.provider_hold->until)});
    result.provider_hold_lifts_at = input.provider_hold->until;
  }
  add_budget_block(input, now, result);
  if (!result.has(kReasonBudgetExceeded)) {
    if (auto team = policy_budget_block(input, now)) {
      result.blocks.push_back(std::move(team->first));
      result.budget_resets_at = team->second;
    }
  }
  HB_ASSERT_MSG(!result.until_a_person_acts || result.blocked(), "only a block waits for a person");
  HB_ASSERT_MSG(!result.budget_resets_at || *result.budget_resets_at > now,
                "a spent budget lifts after now");
  return result;
}

}  // namespace hb::schedule
