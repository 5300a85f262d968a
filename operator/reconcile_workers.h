// The reconcile workers: each takes a key ("namespace/name") from the work
// queue, reconciles it and settles the key: success forgets its failures (and
// requeues it when the reconciler asked to), an error retries it with the
// queue's per-key backoff, or after the server's Retry-After when it was
// throttled (retry_after_error is the one place errors become retries). Reconcile counts, errors
// and durations go to the controller-runtime metrics. Workers run until the queue shuts down.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "controllers/runtime/metrics.h"
#include "controllers/runtime/workqueue.h"
#include "controllers/shell/agent_reconciler.h"  // ReconcileResult

namespace hb::operator_ {

// A throttled answer's Retry-After is obeyed up to this (a hostile or broken
// server cannot park an agent for a day).
inline constexpr int kRetryAfterSecondsMax = 300;

struct ReconcileWorkerDeps {
  using Reconcile = std::function<kube::Result<controllers::ReconcileResult>(
      const std::string& ns, const std::string& name)>;
  using Now = std::function<std::chrono::steady_clock::time_point()>;

  controllers::WorkQueue& queue;
  Reconcile reconcile;
  controllers::Metrics& metrics;
  std::string controller;                    // the metrics' "controller" label
  std::atomic<int>& active_workers;          // reconciles running right now
  Now now = std::chrono::steady_clock::now;  // measures reconcile durations
};

// Takes one key (blocking) and reconciles it; false once the queue shut down.
bool process_next_key(const ReconcileWorkerDeps& deps);
// The same without blocking (the simulation's single thread): false when no
// key is ready now.
bool process_ready_key(const ReconcileWorkerDeps& deps);
// Reconciles a key taken from the queue and settles it (done, forget, retry).
void process_key(const ReconcileWorkerDeps& deps, const std::string& key);

// `count` threads running process_next_key until the queue shuts down; shut
// the queue down, then join them.
std::vector<std::thread> start_reconcile_workers(int count, const ReconcileWorkerDeps& deps);

}  // namespace hb::operator_
