// Which requests the client's rate limiter serves first when they queue for
// the same QPS budget (issue 15): the writes that start heartbeats before
// the ones that record them, and those before bookkeeping. The class rides
// on the calling thread (RequestPriorityScope), so a reconcile pass marks
// each planned write without every Client method taking an extra argument.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string_view>

namespace hb::kube {

enum class RequestClass : uint8_t {
  kDispatch = 0,     // create a heartbeat's run and its Job: the critical path
  kLifecycle = 1,    // a run's Running/final status, the agent status that counts spend
  kBookkeeping = 2,  // other agent status, phase labels, Events, history, per-agent objects
  // The HTTP edge's own calls (a wakeup's run create and reads, the wakeup
  // Secrets, the metrics TokenReviews): a caller outside the cluster's
  // schedule never delays another agent's accounting. They give way after
  // a bounded wait (operator/wakeup.h) instead of queueing for ever.
  kEdge = 3,
};
inline constexpr int kRequestClassCount = 4;

constexpr std::string_view request_class_name(RequestClass c) {
  switch (c) {
    case RequestClass::kDispatch:
      return "dispatch";
    case RequestClass::kLifecycle:
      return "lifecycle";
    case RequestClass::kBookkeeping:
      return "bookkeeping";
    case RequestClass::kEdge:
      return "edge";
  }
  return "lifecycle";
}

struct RequestPriority {
  RequestClass cls = RequestClass::kLifecycle;
  // Within a class, lower first: the heartbeat's slot (Unix seconds), so the
  // earliest slot is dispatched first whatever order passes reached the limiter.
  int64_t order = 0;
};

// The calling thread's priority; kLifecycle with order 0 outside any scope
// (informer lists); the HTTP edge sets kEdge.
// (Defined in hb_kube; the pure decision code uses only the types above.)
RequestPriority current_request_priority();
// Replaces it until the enclosing RequestPriorityScope ends.
void set_current_request_priority(RequestPriority priority);

// Sets the calling thread's priority until the end of the scope (nests).
class RequestPriorityScope {
 public:
  explicit RequestPriorityScope(RequestPriority priority);
  RequestPriorityScope(RequestClass cls, int64_t order = 0)
      : RequestPriorityScope(RequestPriority{cls, order}) {}
  ~RequestPriorityScope();
  RequestPriorityScope(const RequestPriorityScope&) = delete;
  RequestPriorityScope& operator=(const RequestPriorityScope&) = delete;

 private:
  RequestPriority previous_;
};

// When a request that is not a dispatch stops waiting for the rate limiter
// and is not sent (ErrorKind::kGaveWay): a reconcile pass that counts or
// tidies up gives way once its agent's next heartbeat is due, so the pass
// for that heartbeat (which makes its Job first) is not stuck behind this
// one's bookkeeping while every other agent's dispatch is served. A request
// served before that time is sent as usual. Thread-local, like the priority.
using GiveWayTime = std::optional<std::chrono::steady_clock::time_point>;
GiveWayTime current_give_way_time();

class GiveWayScope {
 public:
  explicit GiveWayScope(GiveWayTime at);
  ~GiveWayScope();
  GiveWayScope(const GiveWayScope&) = delete;
  GiveWayScope& operator=(const GiveWayScope&) = delete;

 private:
  GiveWayTime previous_;
};

}  // namespace hb::kube
