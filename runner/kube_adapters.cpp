#include "runner/kube_adapters.h"

#include "api/agent_objects.h"
#include "api/rfc3339.h"
#include "kube/errors.h"
#include "kube/resource.h"

namespace hb::runner {
namespace {

std::string resource_version_of(const nlohmann::json& object) {
  const nlohmann::json* meta =
      object.is_object() && object.contains("metadata") ? &object["metadata"] : nullptr;
  if (meta == nullptr || !meta->is_object()) return "";
  const auto version = meta->find("resourceVersion");
  return version != meta->end() && version->is_string() ? version->get<std::string>() : "";
}

// data["blocks.json"] when it is a string; null otherwise.
const nlohmann::json* stored_blocks_text(const nlohmann::json& config_map) {
  const auto data = config_map.find("data");
  if (data == config_map.end() || !data->is_object()) return nullptr;
  const auto text = data->find(api::kMemoryBlocksKey);
  return text != data->end() && text->is_string() ? &*text : nullptr;
}

}  // namespace

KubeLeaseRenewer::KubeLeaseRenewer(kube::Client& client, std::string ns, std::string lease_name,
                                   std::string holder, std::string agent_name)
    : client_(client),
      ns_(std::move(ns)),
      name_(std::move(lease_name)),
      holder_(std::move(holder)),
      agent_(std::move(agent_name)) {}

kube::Done KubeLeaseRenewer::renew(TimePoint now, std::chrono::seconds duration,
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
  if (patched.ok()) return kube::done();
  if (!patched.is(kube::ErrorKind::kNotFound)) return std::move(patched).error();
  spec["acquireTime"] = api::format_micro_time(now);
  nlohmann::json lease = {
      {"apiVersion", "coordination.k8s.io/v1"},
      {"kind", "Lease"},
      {"metadata",
       {{"name", name_}, {"namespace", ns_}, {"labels", api::agent_object_labels(agent_)}}},
      {"spec", spec}};
  // The LeaseExtender counts a failed beat; the stall window allows for some.
  HB_TRY(client_.create(kube::resources::kLeases, ns_, lease));
  return kube::done();
}

KubeMemoryStore::KubeMemoryStore(kube::Client& client, std::string ns, std::string name,
                                 std::string agent_name)
    : client_(client), ns_(std::move(ns)), name_(std::move(name)), agent_(std::move(agent_name)) {}

kube::Result<std::optional<MemorySnapshot>> KubeMemoryStore::load() {
  kube::Result<nlohmann::json> read = client_.get(kube::resources::kConfigMaps, ns_, name_);
  if (read.is(kube::ErrorKind::kNotFound)) {
    last_ = nullptr;
    return std::optional<MemorySnapshot>();
  }
  HB_TRY_ASSIGN(last_, std::move(read));
  MemorySnapshot snapshot;
  snapshot.resource_version = resource_version_of(last_);
  const nlohmann::json* text = stored_blocks_text(last_);
  if (text == nullptr) return std::optional<MemorySnapshot>(std::move(snapshot));
  api::DecodedMemoryBlocks decoded = decode_memory_blocks(text->get<std::string>());
  if (!decoded.ok()) {
    kube::Error error;
    error.kind = kube::ErrorKind::kMalformed;
    error.message = std::move(decoded.error);
    error.context = "get configmaps " + ns_ + "/" + name_;
    return error;
  }
  snapshot.blocks = std::move(decoded.blocks);
  return std::optional<MemorySnapshot>(std::move(snapshot));
}

kube::Result<std::string> KubeMemoryStore::save(const MemoryBlocks& blocks,
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
  HB_TRY_ASSIGN(last_, std::move(saved));
  return resource_version_of(last_);
}

}  // namespace hb::runner
