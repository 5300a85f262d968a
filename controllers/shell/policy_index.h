// The HeartbeatPolicies of the watched namespaces and what they count, kept
// from the informers (policies, Agents) and the durable ledger
// (ledger_record.h) so a reconcile asks for an agent's team budgets without
// a scan: each policy's spend per month is the sum of what the agents'
// ledger records charged under its name, whatever their labels say now
// (a relabel moves nothing already spent). Agents (their labels) are kept
// only in namespaces with a policy: the first
// policy of a namespace reads its Agents from the cache (AgentSource), the
// last one's deletion forgets them (an entry for every Agent of a fleet
// without policies cost about 1.5 MiB at 10,000 agents). Counts a person reads (agents,
// runningRuns) are taken by a scan when the policy's status is written
// (shell/policy_status_writer.h), a few times a minute, never on the hot path.
#pragma once

#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "controllers/policy/concurrency.h"
#include "controllers/policy/policy_status.h"
#include "controllers/schedule/blocks.h"
#include "controllers/shell/agent_source.h"
#include "controllers/spend/ledger_record.h"

namespace hb::controllers {

// Spend is summed in millionths of a cent: integers add and subtract exactly
// (a double sum would drift as agents come and go).
inline constexpr double kMicroCentsPerCent = 1e6;
inline constexpr int64_t kMicroCentsPerCentInt = 1000000;

// A team's spend in millionths of a cent. Each agent's figure is an int64
// that may be saturated (a forged or runaway status): the sum is kept exact
// in 128 bits, so adding and taking away agents never wraps or drifts, and
// is read saturated to int64.
class MicroCentSum {
 public:
  void add(int64_t micros) { sum_ += micros; }
  void subtract(int64_t micros) { sum_ -= micros; }
  // Whole cents, rounded down, clamped to int64.
  int64_t cents_floor() const;
  double cents() const { return static_cast<double>(sum_) / kMicroCentsPerCent; }
  // Whether the sum has reached `cents` whole cents.
  bool reached_cents(int64_t cents) const;
  bool zero() const { return sum_ == 0; }

 private:
  using Wide = __int128;
  Wide sum_ = 0;
};

// The name of the zone a policy counts its days in ("UTC" when unset).
std::string zone_name(const PolicySpec& policy);

class PolicyIndex {
 public:
  using Enqueue = std::function<void(const std::string& agent_key)>;
  // `enqueue`: an agent whose limits a policy change may have changed.
  explicit PolicyIndex(Enqueue enqueue);
  // Told after a policy changes or an Agent's labels do (the concurrency
  // gate wakes whoever may start now); called without the index's lock.
  // Set before the informers start.
  void on_limits_changed(std::function<void()> limits_changed);
  // Where a namespace's Agents are read when its first policy comes; set
  // before the informers start.
  void read_agents_from(AgentSource agents);

  // From the informers' handlers; null: absent (added or deleted).
  void policy_changed(const Json* old_policy, const Json* policy);
  void agent_changed(const std::string& agent_key, const Json* agent);
  // From the ledger store (shell/ledger_store.h): a record written or read;
  // null: absent.
  void ledger_changed(const LedgerRecord* before, const LedgerRecord* after);
  // Team spend comes from a ledger store: it is unknown until every record
  // has been read (ledgers_loaded). Till then no policy status is written,
  // lest it show a spend lower than the one stored.
  void expect_ledgers();
  void ledgers_loaded();
  bool spend_known() const;

  // The policies over an agent with a team budget or a pause, by policy
  // name; spend as the ledger records hold it (a run still going is not in
  // it yet).
  std::vector<schedule::PolicyBudget> budgets_for(const std::string& agent_key,
                                                  TimePoint now) const;
  // The policies' caps over an agent, as the concurrency gate's pools
  // (pool: the policy key "ns/name").
  std::vector<PoolCap> caps_for(const std::string& agent_key) const;
  // The names of every policy whose selector selects the agent now (budget
  // or not), sorted: what a run made now is stamped with.
  std::vector<std::string> policies_selecting(const std::string& agent_key) const;
  // The zone a policy by "ns/name" counts its days in; nullptr: UTC (also
  // for a policy that is gone).
  const date::time_zone* zone_of(const std::string& policy_key) const;
  // A policy by "ns/name" that exists or that the ledger charged under.
  bool knows_policy(const std::string& policy_key) const;
  // The specs of those policies (their prices and refusals, pricing.h), by name.
  std::vector<PolicySpec> policies_over(const std::string& agent_key) const;

  struct Report {
    PolicySpec spec;
    PolicyTally tally;
    Json stored_status;  // null when it has none
  };
  // Every policy with its counts now; `started_by_agent`: the runs started
  // and not final by agent key (ConcurrencyGate::started_by_agent, which
  // the informers already feed: the index keeps no second copy).
  std::vector<Report> reports(TimePoint now,
                              const std::map<std::string, int64_t>& started_by_agent) const;
  std::size_t size() const;
  // Agents kept (those of namespaces with a policy).
  std::size_t agents_kept() const;

 private:
  struct AgentEntry {
    std::map<std::string, std::string> labels;
  };
  struct PolicyEntry {
    PolicySpec spec;
    Json stored_status;
  };
  using SpendByPeriod = std::map<std::string, MicroCentSum>;
  using Policies = std::map<std::string, PolicyEntry>;
  // The policies of a namespace: keys "ns/name" sort together.
  std::pair<Policies::const_iterator, Policies::const_iterator> in_namespace(
      const std::string& ns) const;
  static AgentEntry entry_of(const Json& agent);
  // What the ledger charged under policy `key` in `period` (0: nothing).
  const MicroCentSum* spent(const std::string& key, const std::string& period) const;
  void count_record(const LedgerRecord& record, int64_t sign);
  void count_periods(const std::string& ns, const std::map<std::string, PeriodSpend>& periods,
                     int64_t sign);
  bool namespace_has_policies(const std::string& ns) const;
  // Reads the Agents of a namespace whose first policy just came (without
  // the lock: the Agent cache tells this index under its handlers).
  void keep_agents_in(const std::string& ns);
  void forget_agents_in(const std::string& ns);
  bool namespace_has_caps(const std::string& ns) const;
  // The policies of `ns` whose budget the spend of `period` has reached (a
  // day key: the daily budgets of the policies counting days in its zone).
  std::set<std::string> spent_budgets(const std::string& ns, const std::string& period) const;
  PolicyEntry entry_for(const Json& policy) const;
  std::vector<std::string> agents_selected(const PolicySpec& spec) const;

  Enqueue enqueue_;
  std::function<void()> limits_changed_;
  AgentSource agent_source_;
  mutable std::mutex mutex_;
  Policies policies_;                         // by "ns/name"
  std::map<std::string, AgentEntry> agents_;  // by "ns/name"
  // What the ledger records charged per policy, by "ns/name" of the policy
  // (kept when the policy goes: one made again under its name resumes it).
  std::map<std::string, SpendByPeriod> spend_;
  bool spend_known_ = true;
};

}  // namespace hb::controllers
