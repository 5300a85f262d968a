// The AgentReconciler's writes of a run's status, deletes and Events.
#include <spdlog/spdlog.h>

#include "api/utf8.h"
#include "controllers/model/names.h"
#include "controllers/run/run_conditions.h"
#include "controllers/schedule/utc_time.h"
#include "controllers/shell/agent_reconciler.h"
#include "kube/errors.h"

namespace hb::controllers {

kube::Done AgentReconciler::write_run_status(Json& run, const Json& status, bool final_with_label) {
  const std::string ns = string_at(run, "metadata/namespace");
  const std::string name = name_of(run);
  const Json* stored = find_path(run, "status");
  // The moment its cost is recorded is the run's one audit line.
  const bool newly_recorded =
      bool_at(status, "costRecorded") && (stored == nullptr || !bool_at(*stored, "costRecorded"));
  // Conditions ride on every status write (no write of their own).
  Json patch_status =
      with_run_conditions(status, stored, int_at(run, "metadata/generation").value_or(1), now());
  if (stored != nullptr && stored->is_object()) {
    for (auto it = stored->begin(); it != stored->end(); ++it) {
      if (!patch_status.contains(it.key())) patch_status[it.key()] = nullptr;
    }
  }
  // Conditional on the run as this pass saw it: the patch replaces the whole
  // status, so one decided from a stale copy (a lost answer, a cache behind)
  // must not overwrite a newer one, least of all a counted run's usage. A
  // 409 retries the pass with the newer copy.
  Json status_patch = {{"status", std::move(patch_status)}};
  if (const std::string rv = string_at(run, "metadata/resourceVersion"); !rv.empty()) {
    status_patch["metadata"] = {{"resourceVersion", rv}};
  }
  HB_TRY_ASSIGN(Json updated, writes_->patch_run_status(ns, name, status_patch));
  if (newly_recorded) spdlog::info("{}", audit_line(updated));
  run = updated;  // a later write of this pass is conditional on this version
  const std::string phase = string_at(status, "phase");
  if (!final_with_label || !phase_is_labelled(phase)) return kube::done();
  const Json* labels = find_path(updated, "metadata/labels");
  const bool labelled = labels != nullptr && labels->is_object() && labels->contains(kLabelPhase) &&
                        (*labels)[kLabelPhase] == phase;
  if (labelled) return kube::done();
  kube::RequestPriorityScope bookkeeping(kube::RequestClass::kBookkeeping);
  Json patch = {{"metadata", {{"labels", {{kLabelPhase, phase}}}}}};
  HB_TRY_ASSIGN(updated, writes_->label_run(ns, name, patch));
  run = std::move(updated);
  return kube::done();
}

kube::Done AgentReconciler::delete_job(const std::string& ns, const std::string& name) {
  HB_TRY_ASSIGN(const bool deleted, writes_->delete_job(ns, name));
  if (deleted) spdlog::info("event=job_deleted namespace={} job={}", ns, name);
  return kube::done();
}

kube::Done AgentReconciler::delete_run(const std::string& ns, const std::string& name) {
  HB_TRY(writes_->delete_run(ns, name));
  return kube::done();
}

void AgentReconciler::record_event(const Json& agent, const Json* run, const Event& event,
                                   TimePoint now) {
  const Json& target = run != nullptr ? *run : agent;
  const std::string ns = string_at(target, "metadata/namespace");
  // client-go's naming (the time in nanoseconds, in hex) plus this process's
  // count of Events, so two at the same instant differ; no randomness, so
  // the simulation replays a seed exactly.
  const auto nanos = std::chrono::duration_cast<std::chrono::nanoseconds>(now.time_since_epoch());
  char suffix[40];
  std::snprintf(suffix, sizeof suffix, "%llx.%llx", static_cast<unsigned long long>(nanos.count()),
                static_cast<unsigned long long>(++events_recorded_));
  const std::string stamp = schedule::format_rfc3339(now);
  Json object = {{"apiVersion", "v1"},
                 {"kind", "Event"},
                 {"metadata",
                  {{"name", std::string(api::utf8_prefix(name_of(target), 200)) + "." + suffix},
                   {"namespace", ns}}},
                 {"involvedObject",
                  {{"apiVersion", std::string(kApiVersion)},
                   {"kind", run != nullptr ? std::string(kRunKind) : std::string(kAgentKind)},
                   {"name", name_of(target)},
                   {"namespace", ns},
                   {"uid", string_at(target, "metadata/uid")}}},
                 {"reason", event.reason},
                 {"message", std::string(api::utf8_prefix(event.message, kEventMessageBytesMax))},
                 {"type", event.warning ? "Warning" : "Normal"},
                 {"source", {{"component", "heartbeat-operator"}}},
                 {"reportingComponent", "heartbeat-operator"},
                 {"firstTimestamp", stamp},
                 {"lastTimestamp", stamp},
                 {"count", 1}};
  const kube::Done created = writes_->create_event(ns, object);
  if (created.ok()) return;
  spdlog::warn("event=event_write_failed namespace={} object={} reason={} error=\"{}\"", ns,
               name_of(target), event.reason, created.error().describe());
}

}  // namespace hb::controllers
