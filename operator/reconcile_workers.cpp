#include "operator/reconcile_workers.h"

#include <spdlog/spdlog.h>

#include "kube/errors.h"

namespace hb::operator_ {

namespace {

std::pair<std::string, std::string> split_key(const std::string& key) {
  const size_t slash = key.find('/');
  return {key.substr(0, slash), key.substr(slash + 1)};
}

// Reconciles `key` and settles it in the queue; the metrics' result label.
std::string reconcile_key(const ReconcileWorkerDeps& deps, const std::string& key) {
  const auto [ns, name] = split_key(key);
  try {
    controllers::ReconcileResult r = deps.reconcile(ns, name);
    deps.queue.forget(key);
    if (!r.requeue_after) return "success";
    deps.queue.add_after(key, *r.requeue_after);
    return "requeue_after";
  } catch (const std::exception& e) {
    const auto* api = dynamic_cast<const kube::ApiError*>(&e);
    const bool conflict = api != nullptr && api->kind() == kube::ErrorKind::kConflict;
    if (conflict) {
      spdlog::debug("event=reconcile_conflict agent={} error=\"{}\"", key, e.what());
    } else {
      spdlog::warn("event=reconcile_failed agent={} error=\"{}\"", key, e.what());
    }
    deps.metrics.counter_add("controller_runtime_reconcile_errors_total",
                             {{"controller", deps.controller}});
    deps.queue.add_rate_limited(key);
    return "error";
  }
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
