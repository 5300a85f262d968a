#include "operator/reconcile_workers.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "kube/errors.h"

namespace hb::operator_ {

namespace {

std::pair<std::string, std::string> split_key(const std::string& key) {
  const size_t slash = key.find('/');
  return {key.substr(0, slash), key.substr(slash + 1)};
}

// The one place a failed reconcile becomes a retry. A throttled answer
// waits what the server asked (at least the per-key backoff); a conflict is
// the cache being behind, expected and quiet; anything else is logged.
void retry_after_error(const ReconcileWorkerDeps& deps, const std::string& key,
                       const kube::Error& error) {
  if (error.kind == kube::ErrorKind::kConflict) {
    spdlog::debug("event=reconcile_conflict agent={} error=\"{}\"", key, error.describe());
  } else {
    spdlog::warn("event=reconcile_failed agent={} kind={} error=\"{}\"", key,
                 kube::to_string(error.kind), error.describe());
  }
  deps.metrics.counter_add("controller_runtime_reconcile_errors_total",
                           {{"controller", deps.controller}});
  std::chrono::milliseconds asked{0};
  if (error.kind == kube::ErrorKind::kTooManyRequests && error.retry_after_seconds) {
    asked = std::chrono::seconds(std::clamp(*error.retry_after_seconds, 1, kRetryAfterSecondsMax));
  }
  deps.queue.add_rate_limited(key, asked);
}

// Reconciles `key` and settles it in the queue; the metrics' result label.
std::string reconcile_key(const ReconcileWorkerDeps& deps, const std::string& key) {
  const auto [ns, name] = split_key(key);
  kube::Result<controllers::ReconcileResult> result = [&]() -> decltype(result) {
    try {
      return deps.reconcile(ns, name);
    } catch (const std::exception& e) {  // not an API error: a bug, kept from killing the worker
      kube::Error bug;
      bug.message = std::string("unexpected exception: ") + e.what();
      bug.context = "reconcile " + key;
      return bug;
    }
  }();
  if (!result.ok() && result.error().kind == kube::ErrorKind::kGaveWay) {
    // Not a failure: the pass stopped waiting for the rate limiter because
    // a heartbeat of this agent came due; the next pass, at once, makes its
    // Job first and decides the rest again.
    spdlog::debug("event=reconcile_gave_way agent={}", key);
    deps.queue.add(key);
    return "gave_way";
  }
  if (!result.ok()) {
    retry_after_error(deps, key, result.error());
    return "error";
  }
  deps.queue.forget(key);
  if (!result.value().requeue_after) return "success";
  deps.queue.add_after(key, *result.value().requeue_after);
  return "requeue_after";
}

}  // namespace

void process_key(const ReconcileWorkerDeps& deps, const std::string& key) {
  ++deps.active_workers;
  const auto started = deps.now();
  const std::string result = reconcile_key(deps, key);
  deps.metrics.counter_add("controller_runtime_reconcile_total",
                           {{"controller", deps.controller}, {"result", result}});
  deps.metrics.observe("controller_runtime_reconcile_time_seconds",
                       {{"controller", deps.controller}},
                       std::chrono::duration<double>(deps.now() - started).count());
  --deps.active_workers;
  deps.queue.done(key);
}

bool process_next_key(const ReconcileWorkerDeps& deps) {
  const std::optional<std::string> key = deps.queue.get();
  if (!key) return false;
  process_key(deps, *key);
  return true;
}

bool process_ready_key(const ReconcileWorkerDeps& deps) {
  const std::optional<std::string> key = deps.queue.try_get();
  if (!key) return false;
  process_key(deps, *key);
  return true;
}

std::vector<std::thread> start_reconcile_workers(int count, const ReconcileWorkerDeps& deps) {
  std::vector<std::thread> workers;
  for (int i = 0; i < count; ++i) {
    workers.emplace_back([&deps] {
      while (process_next_key(deps)) {
      }
    });
  }
  return workers;
}

}  // namespace hb::operator_
