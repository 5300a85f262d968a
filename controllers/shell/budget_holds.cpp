#include "controllers/shell/budget_holds.h"

#include <algorithm>
#include <cmath>

#include "api/hb_assert.h"

namespace hb::controllers {

HoldDecision BudgetHolds::take(const std::string& run_key, const std::string& agent_key,
                               const std::vector<BudgetRoom>& rooms, double worst_case_cents) {
  std::lock_guard lock(mutex_);
  const auto own = holds_.find(run_key);
  const auto held_by_others = [&](const std::string& pool) {
    const auto sum = by_pool_.find(pool);
    double held = sum == by_pool_.end() ? 0 : sum->second.cents;
    if (own != holds_.end() && std::find(own->second.pools.begin(), own->second.pools.end(),
                                         pool) != own->second.pools.end()) {
      held -= own->second.cents;
    }
    return held;
  };
  HoldDecision d = decide_hold(rooms, worst_case_cents, held_by_others);
  if (!d.start || !d.cents) return d;
  if (own != holds_.end()) erase_locked(own);
  Hold hold{agent_key, {}, *d.cents};
  for (const BudgetRoom& room : rooms) hold.pools.push_back(room.pool);
  add_locked(run_key, std::move(hold));
  return d;
}

void BudgetHolds::release(const std::string& run_key) {
  std::lock_guard lock(mutex_);
  if (auto it = holds_.find(run_key); it != holds_.end()) erase_locked(it);
}

void BudgetHolds::keep_only(const std::string& agent_key, const std::set<std::string>& going_on) {
  std::lock_guard lock(mutex_);
  const auto runs = by_agent_.find(agent_key);
  if (runs == by_agent_.end()) return;
  std::vector<std::string> ended;
  for (const std::string& run : runs->second) {
    if (going_on.count(run) == 0) ended.push_back(run);
  }
  for (const std::string& run : ended) erase_locked(holds_.find(run));
}

void BudgetHolds::restore(const std::string& run_key, Hold hold) {
  std::lock_guard lock(mutex_);
  if (holds_.count(run_key) == 0) add_locked(run_key, std::move(hold));
}

bool BudgetHolds::restored() const {
  std::lock_guard lock(mutex_);
  return restored_;
}

void BudgetHolds::restored_all() {
  std::lock_guard lock(mutex_);
  restored_ = true;
}

double BudgetHolds::held(const std::string& pool) const {
  std::lock_guard lock(mutex_);
  const auto sum = by_pool_.find(pool);
  return sum == by_pool_.end() ? 0 : std::max(0.0, sum->second.cents);
}

std::size_t BudgetHolds::size() const {
  std::lock_guard lock(mutex_);
  return holds_.size();
}

void BudgetHolds::add_locked(const std::string& run_key, Hold hold) {
  HB_ASSERT(hold.cents >= 0 && std::isfinite(hold.cents));
  HB_ASSERT(holds_.count(run_key) == 0);
  for (const std::string& pool : hold.pools) {
    PoolSum& sum = by_pool_[pool];
    sum.cents += hold.cents;
    ++sum.holds;
  }
  by_agent_[hold.agent_key].insert(run_key);
  holds_[run_key] = std::move(hold);
}

void BudgetHolds::erase_locked(std::map<std::string, Hold>::iterator it) {
  for (const std::string& pool : it->second.pools) {
    auto sum = by_pool_.find(pool);
    if (sum == by_pool_.end()) continue;
    sum->second.cents -= it->second.cents;
    // Sums of doubles drift: a pool nobody holds in is dropped, not kept near 0.
    if (--sum->second.holds == 0) by_pool_.erase(sum);
  }
  if (auto runs = by_agent_.find(it->second.agent_key); runs != by_agent_.end()) {
    runs->second.erase(it->first);
    if (runs->second.empty()) by_agent_.erase(runs);
  }
  holds_.erase(it);
}

}  // namespace hb::controllers
