// LeaseRenewer and MemoryStore against the Kubernetes API (hb::kube::Client).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "kube/client.h"
#include "runner/heartbeat.h"
#include "runner/memory_store.h"

namespace hb::runner {

// Patches spec.renewTime (and holderIdentity, leaseDurationSeconds) of the
// agent's Lease, and the usage report annotation (api/usage_report.h) with
// this run's name; creates the Lease when it does not exist.
class KubeLeaseRenewer final : public LeaseRenewer {
 public:
  KubeLeaseRenewer(kube::Client& client, std::string ns, std::string lease_name, std::string holder,
                   std::string agent_name);
  kube::Done renew(TimePoint now, std::chrono::seconds duration,
                   const api::UsageReport* usage) override;

 private:
  kube::Client& client_;
  std::string ns_, name_, holder_, agent_;
};

// The memory ConfigMap; blocks in data["blocks.json"]. Other keys, labels and
// owner references set by the operator are kept (read-modify-write).
class KubeMemoryStore final : public MemoryStore {
 public:
  KubeMemoryStore(kube::Client& client, std::string ns, std::string name, std::string agent_name);
  kube::Result<std::optional<MemorySnapshot>> load() override;
  kube::Result<std::string> save(const MemoryBlocks& blocks,
                                 const std::string& expected_resource_version) override;

 private:
  kube::Client& client_;
  std::string ns_, name_, agent_;
  nlohmann::json last_;  // the ConfigMap as last read or written
};

}  // namespace hb::runner
