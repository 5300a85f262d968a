#include "operator/object_refusals.h"

#include <spdlog/spdlog.h>

#include <cstdio>
#include <string_view>

#include "controllers/schedule/utc_time.h"

namespace hb::operator_ {
namespace {

struct WatchedKind {
  std::string_view resource, api_version, kind;
};
// The resources the cache watches (Resource::describe()), and their kinds.
constexpr WatchedKind kWatchedKinds[] = {
    {"agents.heartbeat.dev", "heartbeat.dev/v1alpha1", "Agent"},
    {"heartbeatruns.heartbeat.dev", "heartbeat.dev/v1alpha1", "HeartbeatRun"},
    {"heartbeatpolicies.heartbeat.dev", "heartbeat.dev/v1alpha1", "HeartbeatPolicy"},
    {"jobs.batch", "batch/v1", "Job"},
    {"pods", "v1", "Pod"},
    {"leases.coordination.k8s.io", "coordination.k8s.io/v1", "Lease"},
};

const WatchedKind* kind_of(std::string_view resource) {
  for (const WatchedKind& k : kWatchedKinds) {
    if (k.resource == resource) return &k;
  }
  return nullptr;
}

// Leaves room for the suffix in an Event's name (253 bytes at most).
constexpr std::size_t kEventNamePrefixBytesMax = 200;

}  // namespace

std::optional<nlohmann::json> refusal_event(const kube::RefusedObject& refused,
                                            std::chrono::system_clock::time_point now,
                                            std::uint64_t sequence) {
  const WatchedKind* kind = kind_of(refused.resource);
  if (kind == nullptr || !kube::addressable(refused.metadata)) return std::nullopt;
  const kube::PeekedMetadata& m = refused.metadata;
  const auto nanos = std::chrono::duration_cast<std::chrono::nanoseconds>(now.time_since_epoch());
  char suffix[48];
  std::snprintf(suffix, sizeof suffix, ".%llx.r%llx",
                static_cast<unsigned long long>(nanos.count()),
                static_cast<unsigned long long>(sequence));
  const std::string stamp = schedule::format_rfc3339(now);
  const std::string message = "The operator skips this " + std::string(kind->kind) + " (" +
                              std::string(kube::refusal_label(refused.reason)) +
                              "): its JSON has " + kube::refusal_limit_text(refused.reason) +
                              ". Until it is fixed the operator acts as if it did not exist.";
  return nlohmann::json{{"apiVersion", "v1"},
                        {"kind", "Event"},
                        {"metadata",
                         {{"name", m.name.substr(0, kEventNamePrefixBytesMax) + suffix},
                          {"namespace", m.namespace_}}},
                        {"involvedObject",
                         {{"apiVersion", std::string(kind->api_version)},
                          {"kind", std::string(kind->kind)},
                          {"name", m.name},
                          {"namespace", m.namespace_},
                          {"uid", m.uid}}},
                        {"reason", kObjectRefusedReason},
                        {"message", message},
                        {"type", "Warning"},
                        {"source", {{"component", "heartbeat-operator"}}},
                        {"reportingComponent", "heartbeat-operator"},
                        {"firstTimestamp", stamp},
                        {"lastTimestamp", stamp},
                        {"count", 1}};
}

ObjectRefusalReporter::ObjectRefusalReporter(std::shared_ptr<kube::Client> client,
                                             controllers::Metrics& metrics, Clock now)
    : client_(std::move(client)), metrics_(metrics), now_(std::move(now)) {
  // Every series from the start, so a rate over them is never missing.
  for (const WatchedKind& k : kWatchedKinds) {
    for (const kube::RefusalReason reason : kube::kRefusalReasons) {
      metrics_.counter_add(kObjectsRefusedMetric,
                           {{"resource", std::string(k.resource)},
                            {"reason", std::string(kube::refusal_label(reason))}},
                           0);
    }
  }
  thread_ = std::thread([this] { run(); });
}

ObjectRefusalReporter::~ObjectRefusalReporter() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void ObjectRefusalReporter::report(const kube::RefusedObject& refused) {
  metrics_.counter_add(kObjectsRefusedMetric,
                       {{"resource", refused.resource},
                        {"reason", std::string(kube::refusal_label(refused.reason))}});
  const std::string seen = refused.metadata.uid + "/" + refused.metadata.resource_version + "/" +
                           std::string(kube::refusal_label(refused.reason));
  std::lock_guard lock(mutex_);
  if (stopping_ || remembered_.count(seen) > 0) return;
  std::optional<nlohmann::json> event = refusal_event(refused, now_(), ++sequence_);
  if (!event) return;
  if (pending_.size() >= kRefusalEventsPendingMax) return;  // logged by the informer already
  if (remembered_.size() >= kRefusalEventsRememberedMax) remembered_.clear();
  remembered_.insert(seen);
  pending_.push_back(std::move(*event));
  wake_.notify_one();
}

void ObjectRefusalReporter::run() {
  std::unique_lock lock(mutex_);
  while (true) {
    wake_.wait(lock, [this] { return stopping_ || !pending_.empty(); });
    if (stopping_) return;
    nlohmann::json event = std::move(pending_.front());
    pending_.pop_front();
    lock.unlock();
    const bool written = write(event);
    lock.lock();
    if (written) continue;
    // Not leading yet (the first list refuses before the Lease is taken):
    // kept, and tried again; the write gate sends nothing meanwhile.
    if (pending_.size() < kRefusalEventsPendingMax) pending_.push_front(std::move(event));
    wake_.wait_for(lock, kRefusalEventRetry, [this] { return stopping_; });
  }
}

bool ObjectRefusalReporter::write(const nlohmann::json& event) {
  const std::string ns = event["metadata"]["namespace"].get<std::string>();
  const kube::Result<nlohmann::json> created = client_->create(kube::resources::kEvents, ns, event);
  if (created.ok()) return true;
  if (created.is(kube::ErrorKind::kNotLeader)) return false;
  spdlog::warn("event=event_write_failed namespace={} object={} reason={} error=\"{}\"", ns,
               event["involvedObject"]["name"].get<std::string>(), kObjectRefusedReason,
               created.error().describe());
  return true;  // written or given up: logged
}

}  // namespace hb::operator_
