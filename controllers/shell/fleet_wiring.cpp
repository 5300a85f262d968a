#include "controllers/shell/fleet_wiring.h"

namespace hb::controllers {

FleetParts wire_fleet(int64_t cap, ConcurrencyGate::SteadyClock steady,
                      const ClusterCache::Enqueue& enqueue, std::shared_ptr<kube::Client> client,
                      const std::string& ledger_home, CacheOptions& cache,
                      ReconcilerConfig& reconciler) {
  FleetParts parts;
  parts.policies = std::make_shared<PolicyIndex>(enqueue);
  // The gate holds the operator-wide cap and every HeartbeatPolicy's
  // maxConcurrentRuns (its pools, from the policy index).
  parts.gate = std::make_shared<ConcurrencyGate>(
      cap, std::move(steady), enqueue,
      [policies = parts.policies](const std::string& agent) { return policies->caps_for(agent); });
  // Weak: the gate holds the index (pools_of), so a strong pointer back
  // would keep both alive forever (a leak the sanitizers report).
  parts.policies->on_limits_changed([weak = std::weak_ptr<ConcurrencyGate>(parts.gate)] {
    if (const auto g = weak.lock()) g->pools_changed();
  });
  cache.observe_run = [gate = parts.gate](const std::string& key, const Json* run, bool has_job) {
    gate->observe_run(key, run, has_job);
  };
  cache.policies = parts.policies;
  parts.ledger = std::make_shared<LedgerStore>(std::move(client), ledger_home);
  parts.policies->expect_ledgers();
  parts.ledger->on_change(
      [policies = parts.policies](const LedgerRecord* before, const LedgerRecord* after) {
        policies->ledger_changed(before, after);
      },
      [policies = parts.policies] { policies->ledgers_loaded(); });
  reconciler.concurrency = parts.gate;
  reconciler.policies = parts.policies;
  reconciler.ledger = parts.ledger;
  return parts;
}

}  // namespace hb::controllers
