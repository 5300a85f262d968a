// Writes each HeartbeatPolicy's status (agents, spend, runningRuns,
// conditions) when it differs from the stored one. Runs on its own thread a
// few times a minute, so a fleet of heartbeats costs no policy write on its
// hot path: at most one write per policy per kPolicyStatusInterval.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "controllers/runtime/metrics.h"
#include "controllers/shell/policy_index.h"
#include "kube/client.h"

namespace hb::controllers {

inline constexpr std::chrono::seconds kPolicyStatusInterval{5};
inline constexpr const char* kWritePolicyStatus = "policy_status";

class PolicyStatusWriter {
 public:
  using Clock = std::function<TimePoint()>;
  // Runs started and not final by agent key (ConcurrencyGate::started_by_agent).
  using StartedByAgent = std::function<std::map<std::string, int64_t>()>;
  PolicyStatusWriter(std::shared_ptr<kube::Client> client, const PolicyIndex& index,
                     StartedByAgent started_by_agent, Metrics& metrics, Clock clock);

  // One round: writes every status that changed; how many were written.
  // A failed write is logged and tried again next round.
  int write_changed();
  // Rounds every kPolicyStatusInterval until `stop`.
  void run_until(const std::atomic<bool>& stop);
  // Where the operator runs: no policy status is written there, nor in the
  // system namespaces (managed_namespaces.h).
  void set_own_namespace(std::string ns) { own_namespace_ = std::move(ns); }

 private:
  std::shared_ptr<kube::Client> client_;
  const PolicyIndex& index_;
  StartedByAgent started_by_agent_;
  Metrics& metrics_;
  Clock clock_;
  std::string own_namespace_;
};

}  // namespace hb::controllers
