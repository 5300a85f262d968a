// How one operator process joins the parts that span its whole fleet: the
// HeartbeatPolicy index, the concurrency gate whose pools it answers, and
// the durable spend ledger feeding the index. One definition, so the
// manager, the simulation and the capacity bench run the operator wired the
// same way.
#pragma once

#include <memory>
#include <string>

#include "controllers/shell/agent_reconciler.h"
#include "controllers/shell/cluster_cache.h"
#include "controllers/shell/concurrency_gate.h"
#include "controllers/shell/ledger_store.h"
#include "controllers/shell/policy_index.h"
#include "kube/client.h"

namespace hb::controllers {

struct FleetParts {
  std::shared_ptr<PolicyIndex> policies;
  std::shared_ptr<ConcurrencyGate> gate;
  std::shared_ptr<LedgerStore> ledger;
};

// Makes the parts and hands them to the cache (which feeds the index and
// the gate from its informers) and to the reconciler. `cap` is the
// operator-wide maxConcurrentRuns (0: none); the ledger lives in
// `ledger_home` (the operator's own namespace, never a managed one).
FleetParts wire_fleet(int64_t cap, ConcurrencyGate::SteadyClock steady,
                      const ClusterCache::Enqueue& enqueue, std::shared_ptr<kube::Client> client,
                      const std::string& ledger_home, CacheOptions& cache,
                      ReconcilerConfig& reconciler);

}  // namespace hb::controllers
