#include "runner/kube_adapters.h"

#include "api/agent_objects.h"
#include "api/rfc3339.h"
#include "kube/errors.h"
#include "kube/resource.h"

namespace hb::runner {

KubeLeaseRenewer::KubeLeaseRenewer(kube::Client& client, std::string ns, std::string lease_name,
                                   std::string holder, std::string agent_name)
    : client_(client),
      ns_(std::move(ns)),
      name_(std::move(lease_name)),
      holder_(std::move(holder)),
      agent_(std::move(agent_name)) {}

void KubeLeaseRenewer::renew(TimePoint now, std::chrono::seconds duration,
                             const api::UsageReport* usage) {
  nlohmann::json spec = {{"holderIdentity", holder_},
                         {"leaseDurationSeconds", duration.count()},
                         {"renewTime", api::format_micro_time(now)}};
  nlohmann::json patch = {{"spec", spec}};
  if (usage != nullptr) {
    api::UsageReport named = *usage;
    named.run = holder_;  // the holder is the run's name
    patch["metadata"]["annotations"][api::kAnnotationUsage] = api::encode_usage_report(named);
  }
  kube::Result<nlohmann::json> patched =
      client_.merge_patch(kube::resources::kLeases, ns_, name_, patch);
  if (patched.ok()) return;
  if (!patched.is(kube::ErrorKind::kNotFound)) throw kube::ApiError(std::move(patched).error());
  spec["acquireTime"] = api::format_micro_time(now);
  nlohmann::json lease = {
      {"apiVersion", "coordination.k8s.io/v1"},
      {"kind", "Lease"},
      {"metadata",
       {{"name", name_}, {"namespace", ns_}, {"labels", api::agent_object_labels(agent_)}}},
      {"spec", spec}};
  // The runner's loop counts a failed beat (LeaseRenewer throws); the stall
  // window allows for some.
  (void)client_.create(kube::resources::kLeases, ns_, lease).or_throw();
}

KubeMemoryStore::KubeMemoryStore(kube::Client& client, std::string ns, std::string name,
                                 std::string agent_name)
    : client_(client), ns_(std::move(ns)), name_(std::move(name)), agent_(std::move(agent_name)) {}

std::optional<MemorySnapshot> KubeMemoryStore::load() {
  kube::Result<nlohmann::json> read = client_.get(kube::resources::kConfigMaps, ns_, name_);
  if (read.is(kube::ErrorKind::kNotFound)) {
    last_ = nullptr;
    return std::nullopt;
  }
  last_ = std::move(read).or_throw();
  MemorySnapshot snapshot;
  snapshot.resource_version = last_["metadata"].value("resourceVersion", std::string());
  if (last_.contains("data") && last_["data"].contains(api::kMemoryBlocksKey) &&
      last_["data"][api::kMemoryBlocksKey].is_string()) {
    snapshot.blocks = decode_memory_blocks(last_["data"][api::kMemoryBlocksKey].get<std::string>());
  }
  return snapshot;
}

std::string KubeMemoryStore::save(const MemoryBlocks& blocks,
                                  const std::string& expected_resource_version) {
  kube::Result<nlohmann::json> saved = nlohmann::json();
  if (expected_resource_version.empty()) {
    nlohmann::json object = {
        {"apiVersion", "v1"},
        {"kind", "ConfigMap"},
        {"metadata",
         {{"name", name_}, {"namespace", ns_}, {"labels", api::agent_object_labels(agent_)}}},
        {"data", {{api::kMemoryBlocksKey, encode_memory_blocks(blocks)}}}};
    saved = client_.create(kube::resources::kConfigMaps, ns_, object);
  } else {
    nlohmann::json object =
        last_.is_object() ? last_
                          : nlohmann::json{{"apiVersion", "v1"},
                                           {"kind", "ConfigMap"},
                                           {"metadata", {{"name", name_}, {"namespace", ns_}}}};
    object["metadata"]["resourceVersion"] = expected_resource_version;
    object["data"][api::kMemoryBlocksKey] = encode_memory_blocks(blocks);
    saved = client_.replace(kube::resources::kConfigMaps, ns_, name_, object);
  }
  if (saved.is(kube::ErrorKind::kConflict) || saved.is(kube::ErrorKind::kAlreadyExists)) {
    throw MemoryConflict(saved.error().describe());
  }
  last_ = std::move(saved).or_throw();  // the MemoryStore contract: other failures throw
  return last_["metadata"].value("resourceVersion", std::string());
}

}  // namespace hb::runner
