#include "controllers/spend/budget_hold_ahead.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>

#include "api/hb_assert.h"
#include "controllers/model/run_cost.h"

namespace hb::controllers {

std::string format_hold_cents(double cents) {
  char text[64];
  const auto [end, error] =
      std::to_chars(text, text + sizeof text, std::max(0.0, cents), std::chars_format::fixed, 6);
  HB_ASSERT_MSG(error != std::errc() || parse_hold_cents(std::string_view(text, end - text)),
                "a held figure written reads back");
  return error == std::errc() ? std::string(text, end) : "0";
}

std::optional<double> parse_hold_cents(std::string_view text) {
  double cents = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), cents);
  if (error != std::errc() || end != text.data() + text.size() || !std::isfinite(cents) ||
      cents < 0) {
    return std::nullopt;
  }
  HB_ASSERT(std::isfinite(cents) && cents >= 0);
  return cents;
}

std::optional<double> held_cents_of_job(const Json& job) {
  const Json* annotations = find_path(job, "spec/template/metadata/annotations");
  if (annotations == nullptr || !annotations->is_object()) return std::nullopt;
  const auto cents = annotations->find(kAnnotationBudgetHold);
  if (cents == annotations->end() || !cents->is_string()) return std::nullopt;
  return parse_hold_cents(cents->get_ref<const std::string&>());
}

std::string budget_pool_of_agent(const std::string& agent_key) {
  return "agent:" + agent_key;
}

std::string budget_pool_of_policy(const std::string& ns, const std::string& policy) {
  return "policy:" + ns + "/" + policy;
}

std::string budget_day_pool_of_agent(const std::string& agent_key) {
  return "agent-day:" + agent_key;
}

std::string budget_day_pool_of_policy(const std::string& ns, const std::string& policy) {
  return "policy-day:" + ns + "/" + policy;
}

bool is_day_pool(std::string_view pool) {
  return pool.starts_with("agent-day:") || pool.starts_with("policy-day:");
}

std::vector<std::string> hold_pools(const std::string& agent_key, const std::string& ns,
                                    const std::vector<std::string>& policies) {
  std::vector<std::string> pools{budget_pool_of_agent(agent_key),
                                 budget_day_pool_of_agent(agent_key)};
  for (const std::string& policy : policies) {
    pools.push_back(budget_pool_of_policy(ns, policy));
    pools.push_back(budget_day_pool_of_policy(ns, policy));
  }
  HB_ASSERT_MSG(pools.size() == 2 * (policies.size() + 1), "a month and a day pool for each owner");
  return pools;
}

namespace {

void add_room(std::vector<BudgetRoom>& rooms, std::string pool, int64_t budget, double spent) {
  if (budget <= 0) return;
  rooms.push_back({std::move(pool), std::max(0.0, static_cast<double>(budget) - spent)});
  HB_ASSERT_MSG(rooms.back().left_cents <= static_cast<double>(budget),
                "spend only ever takes room away");
}

}  // namespace

std::vector<BudgetRoom> budget_rooms(const std::string& agent_key, const AgentBudgetFigures& agent,
                                     const std::vector<schedule::PolicyBudget>& teams) {
  std::vector<BudgetRoom> rooms;
  add_room(rooms, budget_pool_of_agent(agent_key), agent.monthly_cents, agent.spent_month_cents);
  add_room(rooms, budget_day_pool_of_agent(agent_key), agent.daily_cents, agent.spent_today_cents);
  for (const schedule::PolicyBudget& team : teams) {
    add_room(rooms, budget_pool_of_policy(team.ns, team.policy), team.budget_cents,
             std::max(static_cast<double>(team.spent_cents), team.exact_spent_cents));
    add_room(rooms, budget_day_pool_of_policy(team.ns, team.policy), team.daily_budget_cents,
             std::max(static_cast<double>(team.spent_today_cents), team.exact_spent_today_cents));
  }
  HB_ASSERT_MSG(rooms.size() <= 2 * (teams.size() + 1), "at most a month and a day room an owner");
  return rooms;
}

double run_worst_case_cents(const AgentSpec& spec, const Pricing& pricing, int64_t per_run_tokens) {
  const UsageBounds bounds = usage_bounds(spec);
  double worst = cost_cents(bounds.input_tokens, bounds.output_tokens, pricing);
  if (per_run_tokens > 0) {
    const double dearest =
        std::max({pricing.input_cents_per_million_tokens, pricing.output_cents_per_million_tokens,
                  cached_input_price(pricing), cache_write_input_price(pricing)});
    worst = std::min(worst, static_cast<double>(per_run_tokens) * dearest / 1e6);
  }
  if (spec.per_run_cents) worst = std::min(worst, std::max(0.0, *spec.per_run_cents));
  worst = std::max(0.0, worst);
  HB_ASSERT_MSG(std::isfinite(worst),
                "prices and token bounds are clamped: a worst case is finite");
  return worst;
}

HoldDecision decide_hold(const std::vector<BudgetRoom>& rooms, double worst_case_cents,
                         const std::function<double(const std::string& pool)>& held_by_others) {
  HB_ASSERT_MSG(std::isfinite(worst_case_cents) && worst_case_cents >= 0,
                "a worst case is run_worst_case_cents'");
  HoldDecision d;
  if (rooms.empty()) return d;
  double alone = worst_case_cents;  // what the run would be given were it the only one
  double now = worst_case_cents;    // what it can be given beside the runs in flight
  for (const BudgetRoom& room : rooms) {
    const double left = std::max(0.0, room.left_cents);
    const double free = std::max(0.0, left - std::max(0.0, held_by_others(room.pool)));
    alone = std::min(alone, left);
    if (free < now) {
      now = free;
      d.waiting_on = room.pool;
      d.bound_by = room.pool;
    }
  }
  // Runs in flight hold room this one would be given: it waits for them.
  if (now < alone) {
    d.start = false;
    return d;
  }
  d.waiting_on.clear();
  d.cents = std::max(0.0, now);
  HB_ASSERT(*d.cents <= alone && alone <= worst_case_cents);
  return d;
}

}  // namespace hb::controllers
