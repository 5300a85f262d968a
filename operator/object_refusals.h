// What the operator does with an object its informers refuse
// (kube/object_refusal.h; the informer has logged it): counts it in
// heartbeat_objects_refused_total{resource,reason} and records a Warning
// Event ObjectRefused on it where it can be addressed (namespace, name and
// uid known and well-formed). Events are written from this reporter's own
// thread: an informer never waits on an API write, and a flood of refusals
// costs a bounded queue, not the reconcilers' requests.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <thread>

#include "controllers/runtime/metrics.h"
#include "kube/client.h"
#include "kube/object_refusal.h"

namespace hb::operator_ {

inline constexpr const char* kObjectsRefusedMetric = "heartbeat_objects_refused_total";
inline constexpr const char* kObjectRefusedReason = "ObjectRefused";
// Events waiting to be written; more are dropped (each was logged).
inline constexpr std::size_t kRefusalEventsPendingMax = 64;
// Refusals already given an Event (by uid, resourceVersion and reason): a
// relist refuses the same object again without a second Event.
inline constexpr std::size_t kRefusalEventsRememberedMax = 4096;
// How often an Event refused by the write gate (not leading) is tried again.
inline constexpr std::chrono::seconds kRefusalEventRetry{2};

// The Event for one refused object, or nullopt when it cannot be addressed
// (kube::addressable) or its resource is not one the operator watches.
// Names the limit and the fix; never the object's content. Pure.
std::optional<nlohmann::json> refusal_event(const kube::RefusedObject& refused,
                                            std::chrono::system_clock::time_point now,
                                            std::uint64_t sequence);

class ObjectRefusalReporter {
 public:
  using Clock = std::function<std::chrono::system_clock::time_point()>;
  ObjectRefusalReporter(std::shared_ptr<kube::Client> client, controllers::Metrics& metrics,
                        Clock now);
  ~ObjectRefusalReporter();
  ObjectRefusalReporter(const ObjectRefusalReporter&) = delete;
  ObjectRefusalReporter& operator=(const ObjectRefusalReporter&) = delete;

  // From any informer's thread; returns at once.
  void report(const kube::RefusedObject& refused);

 private:
  void run();
  // False while this replica may not write (not leading): keep it.
  bool write(const nlohmann::json& event);

  std::shared_ptr<kube::Client> client_;
  controllers::Metrics& metrics_;
  Clock now_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<nlohmann::json> pending_;
  std::set<std::string> remembered_;
  std::uint64_t sequence_ = 0;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace hb::operator_
