// Money held ahead for runs in flight. Before a run starts, what it may
// spend (its worst case, as its bounds and per-run caps allow) is held
// against every budget over it (the Agent's and each team's, monthly and
// daily), out
// of the room those budgets have left after what the runs already going
// hold; the runner is told what was held as the most it may spend, and the
// hold ends when the run is charged. Runs started together therefore cannot
// pass a budget by more than the runner's misestimate of one model call
// each. A run waits while runs in flight hold room it would need; a run
// with no one else holding starts with whatever room is left (its runner
// stops before a call that could pass it). Pure.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "controllers/model/agent_spec.h"
#include "controllers/schedule/blocks.h"
#include "controllers/spend/pricing.h"

namespace hb::controllers {

// How often an agent whose run waits for held room looks again (a run's
// end also wakes it, through its charge's ledger write).
inline constexpr std::chrono::seconds kBudgetHoldRecheck{5};
// On the run's Job template: the cents held for the run, so a restarted
// operator holds them again.
inline constexpr const char* kAnnotationBudgetHold = "heartbeat.dev/budget-hold-cents";

// kAnnotationBudgetHold's value, and back (nullopt: not a finite,
// non-negative number).
std::string format_hold_cents(double cents);
std::optional<double> parse_hold_cents(std::string_view text);

// The cents a Job's template says were held for its run; nullopt: none.
std::optional<double> held_cents_of_job(const Json& job);

// A budget over a run and the cents it has left (never negative).
struct BudgetRoom {
  std::string pool;  // budget_pool_of_agent / budget_pool_of_policy
  double left_cents = 0;
};

std::string budget_pool_of_agent(const std::string& agent_key);
std::string budget_pool_of_policy(const std::string& ns, const std::string& policy);
// The daily budgets' pools.
std::string budget_day_pool_of_agent(const std::string& agent_key);
std::string budget_day_pool_of_policy(const std::string& ns, const std::string& policy);
bool is_day_pool(std::string_view pool);
// Every pool a run of the agent admitted by `policies` holds in.
std::vector<std::string> hold_pools(const std::string& agent_key, const std::string& ns,
                                    const std::vector<std::string>& policies);

// The Agent's own budgets and what its ledger counts against them.
struct AgentBudgetFigures {
  int64_t monthly_cents = 0;  // spec.budget.monthlyCents; <= 0: none
  double spent_month_cents = 0;
  int64_t daily_cents = 0;  // spec.budget.dailyCents; <= 0: none
  double spent_today_cents = 0;
};

// The Agent's budgets (> 0, less its ledger figures) and each team budget
// over it (monthly and daily, > 0, less its spend).
std::vector<BudgetRoom> budget_rooms(const std::string& agent_key, const AgentBudgetFigures& agent,
                                     const std::vector<schedule::PolicyBudget>& teams);

// What a run may spend at most: its token bounds (usage_bounds) and
// `per_run_tokens` (0: none) at `pricing`'s dearest price, and
// spec.budget.perRunCents.
double run_worst_case_cents(const AgentSpec& spec, const Pricing& pricing, int64_t per_run_tokens);

struct HoldDecision {
  bool start = true;
  // The cents held for the run (when it starts under some budget); none
  // when no budget is over it.
  std::optional<double> cents;
  std::string waiting_on;  // the pool whose room runs in flight hold
  // The pool whose room is smaller than the worst case and than every
  // other's: what bounds the run (empty: its own worst case does).
  std::string bound_by;
};

// `held_by_others(pool)`: the cents runs in flight hold in `pool`.
HoldDecision decide_hold(const std::vector<BudgetRoom>& rooms, double worst_case_cents,
                         const std::function<double(const std::string& pool)>& held_by_others);

}  // namespace hb::controllers
