#include "controllers/shell/policy_index.h"

#include <date/tz.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <optional>
#include <set>

#include "api/hb_assert.h"
#include "controllers/schedule/spend.h"
#include "controllers/schedule/spend_day.h"

namespace hb::controllers {

namespace {

// The generation changes with the spec only (the status is a subresource).
bool same_spec(const Json& a, const Json& b) {
  const std::optional<int64_t> generation = int_at(a, "metadata/generation");
  return generation && generation == int_at(b, "metadata/generation") &&
         string_at(a, "metadata/uid") == string_at(b, "metadata/uid");
}

}  // namespace

std::string zone_name(const PolicySpec& policy) {
  return policy.time_zone == nullptr ? std::string(schedule::kUtcZoneName)
                                     : std::string(policy.time_zone->name());
}

int64_t MicroCentSum::cents_floor() const {
  Wide cents = sum_ / kMicroCentsPerCentInt;  // truncates toward zero
  if (sum_ % kMicroCentsPerCentInt < 0) --cents;
  if (cents > INT64_MAX) return INT64_MAX;
  if (cents < INT64_MIN) return INT64_MIN;
  return static_cast<int64_t>(cents);
}

bool MicroCentSum::reached_cents(int64_t cents) const {
  return sum_ >= static_cast<Wide>(cents) * kMicroCentsPerCentInt;
}

PolicyIndex::PolicyIndex(Enqueue enqueue) : enqueue_(std::move(enqueue)) {}

void PolicyIndex::on_limits_changed(std::function<void()> limits_changed) {
  limits_changed_ = std::move(limits_changed);
}

void PolicyIndex::read_agents_from(AgentSource agents) {
  agent_source_ = std::move(agents);
}

bool PolicyIndex::namespace_has_policies(const std::string& ns) const {
  const auto [begin, end] = in_namespace(ns);
  return begin != end;
}

PolicyIndex::AgentEntry PolicyIndex::entry_of(const Json& agent) {
  AgentEntry entry;
  entry.labels = labels_of(agent);
  return entry;
}

void PolicyIndex::keep_agents_in(const std::string& ns) {
  if (!agent_source_.for_each_in) return;
  agent_source_.for_each_in(ns, [this, &ns](const std::string& key, const Json& agent) {
    std::lock_guard lock(mutex_);
    // The snapshot may be older than what the handlers told since the
    // namespace got its policy: a change told is kept (it is newer), and an
    // Agent deleted since (no longer stored) is not brought back.
    if (agents_.count(key) > 0 || !namespace_has_policies(ns)) return;
    if (agent_source_.contains && !agent_source_.contains(key)) return;
    agents_.emplace(key, entry_of(agent));
  });
}

void PolicyIndex::forget_agents_in(const std::string& ns) {
  agents_.erase(agents_.lower_bound(ns + "/"), agents_.lower_bound(ns + "0"));
}

bool PolicyIndex::namespace_has_caps(const std::string& ns) const {
  const auto [begin, end] = in_namespace(ns);
  return std::any_of(begin, end,
                     [](const auto& p) { return p.second.spec.max_concurrent_runs > 0; });
}

std::pair<PolicyIndex::Policies::const_iterator, PolicyIndex::Policies::const_iterator>
PolicyIndex::in_namespace(const std::string& ns) const {
  // '0' follows '/' in ASCII: [ns/, ns0) holds exactly the keys "ns/...".
  return {policies_.lower_bound(ns + "/"), policies_.lower_bound(ns + "0")};
}

const MicroCentSum* PolicyIndex::spent(const std::string& key, const std::string& period) const {
  const auto policy = spend_.find(key);
  if (policy == spend_.end()) return nullptr;
  const auto sum = policy->second.find(period);
  return sum == policy->second.end() ? nullptr : &sum->second;
}

void PolicyIndex::count_periods(const std::string& ns,
                                const std::map<std::string, PeriodSpend>& periods, int64_t sign) {
  for (const auto& [period, spend] : periods) {
    for (const auto& [policy, micros] : spend.policy_micro_cents) {
      SpendByPeriod& by_period = spend_[ns + "/" + policy];
      MicroCentSum& sum = by_period[period];
      if (sign > 0) {
        sum.add(micros);
      } else {
        sum.subtract(micros);
        // Days come and go every day: one no record holds is dropped.
        if (sum.zero() && !schedule::day_of_key(period).empty()) by_period.erase(period);
      }
    }
  }
}

void PolicyIndex::count_record(const LedgerRecord& record, int64_t sign) {
  count_periods(record.ns, record.periods, sign);
  count_periods(record.ns, record.days, sign);
}

void PolicyIndex::ledger_changed(const LedgerRecord* before, const LedgerRecord* after) {
  HB_ASSERT(before != nullptr || after != nullptr);
  const std::string ns = after != nullptr ? after->ns : before->ns;
  std::set<std::string> periods;
  for (const LedgerRecord* r : {before, after}) {
    if (r == nullptr) continue;
    for (const auto& entry : r->periods) periods.insert(entry.first);
    for (const auto& entry : r->days) periods.insert(entry.first);
  }
  std::vector<std::string> touched;  // agents of a team budget this spend used up or freed
  {
    std::lock_guard lock(mutex_);
    std::map<std::string, std::set<std::string>> spent_before;
    for (const std::string& period : periods) spent_before[period] = spent_budgets(ns, period);
    if (before != nullptr) count_record(*before, -1);
    if (after != nullptr) count_record(*after, +1);
    for (const std::string& period : periods) {
      const std::set<std::string> spent_after = spent_budgets(ns, period);
      std::vector<std::string> crossed;
      std::set_symmetric_difference(spent_before[period].begin(), spent_before[period].end(),
                                    spent_after.begin(), spent_after.end(),
                                    std::back_inserter(crossed));
      for (const std::string& key : crossed) {
        for (std::string& a : agents_selected(policies_.at(key).spec))
          touched.push_back(std::move(a));
      }
    }
  }
  for (const std::string& key : touched) enqueue_(key);
}

void PolicyIndex::expect_ledgers() {
  std::lock_guard lock(mutex_);
  spend_known_ = false;
}

void PolicyIndex::ledgers_loaded() {
  std::lock_guard lock(mutex_);
  spend_known_ = true;
}

bool PolicyIndex::spend_known() const {
  std::lock_guard lock(mutex_);
  return spend_known_;
}

std::vector<std::string> PolicyIndex::agents_selected(const PolicySpec& spec) const {
  std::vector<std::string> out;
  for (auto it = agents_.lower_bound(spec.ns + "/"); it != agents_.lower_bound(spec.ns + "0");
       ++it) {
    if (spec.selects(it->second.labels)) out.push_back(it->first);
  }
  return out;
}

PolicyIndex::PolicyEntry PolicyIndex::entry_for(const Json& policy) const {
  PolicyEntry entry;
  entry.spec = parse_policy(policy);
  if (const Json* status = find_path(policy, "status")) entry.stored_status = *status;
  return entry;
}

void PolicyIndex::policy_changed(const Json* old_policy, const Json* policy) {
  HB_ASSERT(old_policy != nullptr || policy != nullptr);
  std::vector<std::string> touched;
  const std::string ns = namespace_of(policy != nullptr ? *policy : *old_policy);
  bool first_in_namespace = false;
  {
    std::lock_guard lock(mutex_);
    if (old_policy != nullptr && policy != nullptr && same_spec(*old_policy, *policy)) {
      // The operator's own status write (or a relist): no limit changed.
      auto it = policies_.find(object_key(*policy));
      const Json* status = find_path(*policy, "status");
      if (it != policies_.end()) it->second.stored_status = status ? *status : Json();
      return;
    }
    first_in_namespace = policy != nullptr && !namespace_has_policies(ns);
    if (old_policy != nullptr) {
      auto it = policies_.find(object_key(*old_policy));
      if (it != policies_.end()) {
        touched = agents_selected(it->second.spec);
        policies_.erase(it);
      }
    }
    if (policy != nullptr) policies_.insert_or_assign(object_key(*policy), entry_for(*policy));
    if (!namespace_has_policies(ns)) forget_agents_in(ns);
  }
  // Its agents counted into it as they are read.
  if (first_in_namespace) keep_agents_in(ns);
  if (policy != nullptr) {
    std::lock_guard lock(mutex_);
    const auto it = policies_.find(object_key(*policy));
    if (it != policies_.end()) {
      for (std::string& key : agents_selected(it->second.spec)) touched.push_back(std::move(key));
    }
  }
  for (const std::string& key : touched) enqueue_(key);
  if (limits_changed_) limits_changed_();
}

std::set<std::string> PolicyIndex::spent_budgets(const std::string& ns,
                                                 const std::string& period) const {
  std::set<std::string> out;
  const auto [begin, end] = in_namespace(ns);
  for (auto it = begin; it != end; ++it) {
    const PolicyEntry& p = it->second;
    const bool day = !schedule::day_of_key(period).empty();
    const int64_t budget = day ? p.spec.daily_budget_cents : p.spec.monthly_budget_cents;
    if (budget <= 0 || (day && schedule::zone_of_key(period) != zone_name(p.spec))) continue;
    const MicroCentSum* sum = spent(it->first, period);
    if (sum != nullptr && sum->reached_cents(budget)) out.insert(it->first);
  }
  return out;
}

void PolicyIndex::agent_changed(const std::string& agent_key, const Json* agent) {
  const std::string ns = namespace_of_key(agent_key);
  bool caps_moved = false;  // its labels changed where a policy caps runs
  {
    std::lock_guard lock(mutex_);
    const auto it = agents_.find(agent_key);
    if (it == agents_.end() && !namespace_has_policies(ns)) return;  // no policy counts it
    std::optional<std::map<std::string, std::string>> old_labels;
    if (it != agents_.end()) {
      old_labels = std::move(it->second.labels);
      agents_.erase(it);
    }
    if (agent != nullptr) {
      AgentEntry entry = entry_of(*agent);
      caps_moved = old_labels && *old_labels != entry.labels;
      agents_.emplace(agent_key, std::move(entry));
    }
    caps_moved = caps_moved && namespace_has_caps(ns);
  }
  if (caps_moved && limits_changed_) limits_changed_();
}

std::vector<schedule::PolicyBudget> PolicyIndex::budgets_for(const std::string& agent_key,
                                                             TimePoint now) const {
  std::vector<schedule::PolicyBudget> out;
  const std::string period = schedule::spend_period(now);
  std::lock_guard lock(mutex_);
  const auto agent = agents_.find(agent_key);
  if (agent == agents_.end()) return out;
  const auto [begin, end] = in_namespace(namespace_of_key(agent_key));
  for (auto it = begin; it != end; ++it) {
    const PolicyEntry& p = it->second;
    if (p.spec.monthly_budget_cents <= 0 && p.spec.daily_budget_cents <= 0 && !p.spec.paused)
      continue;
    if (!p.spec.selects(agent->second.labels)) continue;
    const MicroCentSum* sum = spent(it->first, period);
    const std::string day = schedule::spend_day(now, p.spec.time_zone);
    const MicroCentSum* today = spent(it->first, day);
    out.push_back({p.spec.name, p.spec.monthly_budget_cents,
                   sum == nullptr ? 0 : sum->cents_floor(), period, p.spec.ns, p.spec.paused,
                   p.spec.cancel_running, p.spec.finish_on_exceeded, p.spec.daily_budget_cents,
                   today == nullptr ? 0 : today->cents_floor(), day,
                   schedule::start_of_next_day(now, p.spec.time_zone),
                   sum == nullptr ? 0 : sum->cents(), today == nullptr ? 0 : today->cents()});
  }
  return out;
}

std::vector<std::string> PolicyIndex::policies_selecting(const std::string& agent_key) const {
  std::vector<std::string> out;
  std::lock_guard lock(mutex_);
  const auto agent = agents_.find(agent_key);
  if (agent == agents_.end()) return out;
  const auto [begin, end] = in_namespace(namespace_of_key(agent_key));
  for (auto it = begin; it != end; ++it) {
    if (it->second.spec.selects(agent->second.labels)) out.push_back(it->second.spec.name);
  }
  return out;  // keys "ns/name" of one namespace sort by name
}

const date::time_zone* PolicyIndex::zone_of(const std::string& policy_key) const {
  std::lock_guard lock(mutex_);
  const auto it = policies_.find(policy_key);
  return it == policies_.end() ? nullptr : it->second.spec.time_zone;
}

bool PolicyIndex::knows_policy(const std::string& policy_key) const {
  std::lock_guard lock(mutex_);
  return policies_.count(policy_key) > 0 || spend_.count(policy_key) > 0;
}

std::vector<PolicySpec> PolicyIndex::policies_over(const std::string& agent_key) const {
  std::vector<PolicySpec> out;
  std::lock_guard lock(mutex_);
  const auto agent = agents_.find(agent_key);
  if (agent == agents_.end()) return out;
  const auto [begin, end] = in_namespace(namespace_of_key(agent_key));
  for (auto it = begin; it != end; ++it) {
    if (it->second.spec.selects(agent->second.labels)) out.push_back(it->second.spec);
  }
  return out;
}

std::vector<PoolCap> PolicyIndex::caps_for(const std::string& agent_key) const {
  std::vector<PoolCap> out;
  std::lock_guard lock(mutex_);
  const auto agent = agents_.find(agent_key);
  if (agent == agents_.end()) return out;
  const auto [begin, end] = in_namespace(namespace_of_key(agent_key));
  for (auto it = begin; it != end; ++it) {
    const PolicySpec& spec = it->second.spec;
    if (spec.max_concurrent_runs > 0 && spec.selects(agent->second.labels)) {
      out.push_back({it->first, spec.max_concurrent_runs});
    }
  }
  return out;
}

std::vector<PolicyIndex::Report> PolicyIndex::reports(
    TimePoint now, const std::map<std::string, int64_t>& started_by_agent) const {
  std::vector<Report> out;
  const std::string period = schedule::spend_period(now);
  std::lock_guard lock(mutex_);
  for (const auto& [key, p] : policies_) {
    Report r{p.spec, {}, p.stored_status};
    r.tally.period = period;
    const std::vector<std::string> selected = agents_selected(p.spec);
    r.tally.agents = static_cast<int64_t>(selected.size());
    for (const std::string& agent : selected) {
      const auto started = started_by_agent.find(agent);
      if (started != started_by_agent.end()) r.tally.running_runs += started->second;
    }
    if (const MicroCentSum* sum = spent(key, period)) r.tally.spent_cents = sum->cents();
    r.tally.day = schedule::spend_day(now, p.spec.time_zone);
    if (const MicroCentSum* sum = spent(key, r.tally.day)) r.tally.spent_today_cents = sum->cents();
    out.push_back(std::move(r));
  }
  return out;
}

std::size_t PolicyIndex::size() const {
  std::lock_guard lock(mutex_);
  return policies_.size();
}

std::size_t PolicyIndex::agents_kept() const {
  std::lock_guard lock(mutex_);
  return agents_.size();
}

}  // namespace hb::controllers
