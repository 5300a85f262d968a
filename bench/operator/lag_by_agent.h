// Schedule lag per run, from outside the operator, so one agent's runs can
// be told apart from the rest (the operator's histogram has no agent label):
// a watch on the namespace's HeartbeatRuns keeps each scheduler run's slot
// (spec.scheduledTime), a watch on its Jobs the time each run's Job was
// first seen. Lag = Job seen - slot: the operator's own figure (Job created
// - slot) plus the watch's delivery, milliseconds on a local control plane.
// Both are recorded as they arrive, so runs the history cleanup deletes
// before the end still count.
#pragma once

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "controllers/model/json_util.h"
#include "controllers/model/names.h"
#include "controllers/model/run_view.h"
#include "kube/informer.h"

namespace hb::bench {

inline constexpr std::chrono::seconds kLagWatchSyncMax{60};

class LagByAgent {
 public:
  using TimePoint = std::chrono::system_clock::time_point;
  struct Lags {
    std::vector<double> of_agent, of_others;  // seconds, sorted
  };

  LagByAgent(std::shared_ptr<kube::Client> client, const std::string& ns)
      : runs_(client, kube::resources::kHeartbeatRuns, in_namespace(ns)),
        jobs_(client, kube::resources::kJobs, in_namespace(ns)) {
    kube::StoreHandlers on_runs, on_jobs;
    on_runs.on_add = [this](const nlohmann::json& run) { on_run(run); };
    on_jobs.on_add = [this](const nlohmann::json& job) { on_job(job); };
    runs_.set_handlers(std::move(on_runs));
    jobs_.set_handlers(std::move(on_jobs));
  }
  ~LagByAgent() { stop(); }

  bool start() {
    runs_.start();
    jobs_.start();
    return runs_.wait_for_sync(kLagWatchSyncMax) && jobs_.wait_for_sync(kLagWatchSyncMax);
  }
  void stop() {
    runs_.stop();
    jobs_.stop();
  }

  // The lags of scheduler runs whose Job was seen in [from, to): `agent`'s
  // apart from every other agent's.
  Lags lags(TimePoint from, TimePoint to, const std::string& agent) const {
    std::lock_guard lock(mutex_);
    Lags out;
    for (const auto& [run, job] : jobs_seen_) {
      const auto slot = slots_.find(run);
      if (slot == slots_.end() || job.seen < from || job.seen >= to) continue;
      const double lag = std::chrono::duration<double>(job.seen - slot->second).count();
      (job.agent == agent ? out.of_agent : out.of_others).push_back(lag);
    }
    std::sort(out.of_agent.begin(), out.of_agent.end());
    std::sort(out.of_others.begin(), out.of_others.end());
    return out;
  }

 private:
  struct JobSeen {
    std::string agent;
    TimePoint seen;
  };

  static kube::InformerOptions in_namespace(const std::string& ns) {
    kube::InformerOptions o;
    o.namespace_ = ns;
    return o;
  }
  void on_run(const nlohmann::json& run) {
    const auto slot = controllers::time_at(run, "spec/scheduledTime");
    if (!slot ||
        controllers::string_at(run, "spec/invocationSource") != controllers::kSourceScheduler)
      return;
    std::lock_guard lock(mutex_);
    slots_.emplace(controllers::string_at(run, "metadata/name"), *slot);
  }
  void on_job(const nlohmann::json& job) {
    const auto seen = std::chrono::system_clock::now();
    const nlohmann::json annotations =
        job.at("metadata").value("annotations", nlohmann::json::object());
    const std::string run = annotations.value(controllers::kAnnotationRunName, "");
    if (run.empty()) return;
    std::lock_guard lock(mutex_);
    jobs_seen_.emplace(run,
                       JobSeen{annotations.value(controllers::kAnnotationAgentName, ""), seen});
  }

  kube::Informer runs_, jobs_;
  mutable std::mutex mutex_;                  // guards the maps below
  std::map<std::string, TimePoint> slots_;    // scheduler run name -> slot
  std::map<std::string, JobSeen> jobs_seen_;  // run name -> its Job, first seen
};

}  // namespace hb::bench
