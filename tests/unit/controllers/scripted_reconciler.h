// The real AgentReconciler for the shell's unit tests: over the test's
// ClusterView and a real kube::Client whose transport is the test's scripted
// http::Client (no rate limit), with the clock fixed at `now`.
#pragma once

#include <memory>

#include "controllers/shell/agent_reconciler.h"
#include "kube/client.h"

namespace hb::controllers::testing {

inline std::unique_ptr<AgentReconciler> reconciler_over(std::shared_ptr<http::Client> api,
                                                        const ClusterView& view, Metrics& metrics,
                                                        TimePoint now) {
  kube::ClusterConfig cluster;
  cluster.server = "https://api.invalid";
  kube::ClientOptions options;
  options.qps = 0;
  return std::make_unique<AgentReconciler>(std::make_shared<kube::Client>(cluster, options, api),
                                           view, ReconcilerConfig{}, metrics,
                                           [now] { return now; });
}

}  // namespace hb::controllers::testing
