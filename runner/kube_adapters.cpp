#include "runner/kube_adapters.h"

#include <cstdio>

#include "kube/errors.h"
#include "kube/resource.h"

namespace hb::runner {
namespace {

constexpr const char* kBlocksKey = "blocks.json";
constexpr const char* kAgentLabel = "heartbeat.dev/agent";

}  // namespace

std::string format_micro_time(TimePoint time) {
  auto seconds = std::chrono::floor<std::chrono::seconds>(time);
  auto micros = std::chrono::duration_cast<std::chrono::microseconds>(time - seconds).count();
  auto days = std::chrono::floor<std::chrono::days>(seconds);
  std::chrono::year_month_day ymd{days};
  std::chrono::hh_mm_ss hms{seconds - days};
  char buffer[48];
  std::snprintf(buffer, sizeof buffer, "%04d-%02u-%02uT%02d:%02d:%02d.%06lldZ",
                static_cast<int>(ymd.year()), static_cast<unsigned>(ymd.month()),
                static_cast<unsigned>(ymd.day()), static_cast<int>(hms.hours().count()),
                static_cast<int>(hms.minutes().count()), static_cast<int>(hms.seconds().count()),
                static_cast<long long>(micros));
  return buffer;
}

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
                         {"renewTime", format_micro_time(now)}};
  nlohmann::json patch = {{"spec", spec}};
  if (usage != nullptr) {
    api::UsageReport named = *usage;
    named.run = holder_;  // the holder is the run's name
    patch["metadata"]["annotations"][api::kAnnotationUsage] = api::encode_usage_report(named);
  }
  try {
    client_.merge_patch(kube::resources::kLeases, ns_, name_, patch);
  } catch (const kube::ApiError& error) {
    if (error.kind() != kube::ErrorKind::kNotFound) throw;
    spec["acquireTime"] = format_micro_time(now);
    nlohmann::json lease = {
        {"apiVersion", "coordination.k8s.io/v1"},
        {"kind", "Lease"},
        {"metadata", {{"name", name_}, {"namespace", ns_}, {"labels", {{kAgentLabel, agent_}}}}},
        {"spec", spec}};
    client_.create(kube::resources::kLeases, ns_, lease);
  }
}

KubeMemoryStore::KubeMemoryStore(kube::Client& client, std::string ns, std::string name,
                                 std::string agent_name)
    : client_(client), ns_(std::move(ns)), name_(std::move(name)), agent_(std::move(agent_name)) {}

std::optional<MemorySnapshot> KubeMemoryStore::load() {
  try {
    last_ = client_.get(kube::resources::kConfigMaps, ns_, name_);
  } catch (const kube::ApiError& error) {
    if (error.kind() == kube::ErrorKind::kNotFound) {
      last_ = nullptr;
      return std::nullopt;
    }
    throw;
  }
  MemorySnapshot snapshot;
  snapshot.resource_version = last_["metadata"].value("resourceVersion", std::string());
  if (last_.contains("data") && last_["data"].contains(kBlocksKey) &&
      last_["data"][kBlocksKey].is_string()) {
    snapshot.blocks = decode_memory_blocks(last_["data"][kBlocksKey].get<std::string>());
  }
  return snapshot;
}

std::string KubeMemoryStore::save(const MemoryBlocks& blocks,
                                  const std::string& expected_resource_version) {
  try {
    nlohmann::json saved;
    if (expected_resource_version.empty()) {
      nlohmann::json object = {
          {"apiVersion", "v1"},
          {"kind", "ConfigMap"},
          {"metadata", {{"name", name_}, {"namespace", ns_}, {"labels", {{kAgentLabel, agent_}}}}},
          {"data", {{kBlocksKey, encode_memory_blocks(blocks)}}}};
      saved = client_.create(kube::resources::kConfigMaps, ns_, object);
    } else {
      nlohmann::json object =
          last_.is_object() ? last_
                            : nlohmann::json{{"apiVersion", "v1"},
                                             {"kind", "ConfigMap"},
                                             {"metadata", {{"name", name_}, {"namespace", ns_}}}};
      object["metadata"]["resourceVersion"] = expected_resource_version;
      object["data"][kBlocksKey] = encode_memory_blocks(blocks);
      saved = client_.replace(kube::resources::kConfigMaps, ns_, name_, object);
    }
    last_ = saved;
    return saved["metadata"].value("resourceVersion", std::string());
  } catch (const kube::ApiError& error) {
    if (error.kind() == kube::ErrorKind::kConflict ||
        error.kind() == kube::ErrorKind::kAlreadyExists) {
      throw MemoryConflict(error.what());
    }
    throw;
  }
}

}  // namespace hb::runner
