#include "controllers/run/cache_projection.h"

#include <initializer_list>

#include "api/hb_assert.h"
#include "api/heartbeat_pod.h"
#include "controllers/model/names.h"
#include "controllers/model/run_view.h"
#include "controllers/run/run_record.h"
#include "controllers/spend/budget_hold_ahead.h"

namespace hb::controllers {

namespace {

// Moves the named members of `from` (when it is an object) into a new object.
Json take(Json& from, std::initializer_list<const char*> keys) {
  Json out = Json::object();
  if (!from.is_object()) return out;
  for (const char* key : keys) {
    auto it = from.find(key);
    if (it != from.end()) out[key] = std::move(*it);
  }
  return out;
}

Json projected_metadata(Json& metadata) {
  Json out = take(metadata, {"name", "namespace", "uid", "resourceVersion", "creationTimestamp",
                             "deletionTimestamp", "labels", "ownerReferences"});
  if (auto annotations = metadata.find("annotations"); annotations != metadata.end()) {
    Json kept =
        take(*annotations, {kAnnotationAgentName, kAnnotationRunName, kAnnotationStartedAt});
    if (!kept.empty()) out["annotations"] = std::move(kept);
  }
  return out;
}

// `object` with only kind, apiVersion and projected metadata.
Json projected_shell(Json& object) {
  Json out = take(object, {"apiVersion", "kind"});
  if (auto meta = object.find("metadata"); meta != object.end()) {
    out["metadata"] = projected_metadata(*meta);
  }
  return out;
}

Json projected_container_status(Json& status) {
  const bool runner = string_at(status, "name") == api::kRunnerContainerName;
  Json out = take(status, {"name", "state"});
  if (!runner) {
    auto state = out.find("state");
    if (state != out.end() && state->is_object()) {
      auto terminated = state->find("terminated");
      if (terminated != state->end() && terminated->is_object()) terminated->erase("message");
    }
  }
  return out;
}

}  // namespace

void project_job(Json& job) {
  if (!job.is_object()) return;
  Json out = projected_shell(job);
  // The admitting policies' trusted copy (run_record.h admitting_policies)
  // and the cents held for the run (budget_hold_ahead.h).
  if (const Json* annotations = find_path(job, "spec/template/metadata/annotations");
      annotations != nullptr && annotations->is_object()) {
    for (const char* key : {kAnnotationPolicies, kAnnotationBudgetHold}) {
      if (auto kept = annotations->find(key); kept != annotations->end()) {
        out["spec"]["template"]["metadata"]["annotations"][key] = *kept;
      }
    }
  }
  if (auto status = job.find("status"); status != job.end()) {
    Json kept = take(*status, {"conditions"});
    if (!kept.empty()) out["status"] = std::move(kept);
  }
  job = std::move(out);
}

void project_pod(Json& pod) {
  if (!pod.is_object()) return;
  Json out = projected_shell(pod);
  if (auto status = pod.find("status"); status != pod.end()) {
    Json kept = take(*status, {"phase", "reason", "conditions"});
    if (auto statuses = status->find("containerStatuses");
        statuses != status->end() && statuses->is_array()) {
      Json projected = Json::array();
      for (Json& s : *statuses) projected.push_back(projected_container_status(s));
      kept["containerStatuses"] = std::move(projected);
    }
    if (!kept.empty()) out["status"] = std::move(kept);
  }
  pod = std::move(out);
}

void project_run(Json& run) {
  if (!run.is_object()) return;
  auto status = run.find("status");
  if (status == run.end() || !status->is_object() || !is_settled(run)) return;
  for (const char* unread : {"conditions", "log", "podName", "observedGeneration",
                             "durationSeconds", "idle", "jobName", "jobUID"}) {
    status->erase(unread);
  }
  if (auto usage = status->find("usage"); usage != status->end()) {
    *usage = take(*usage, {"inputTokens", "outputTokens", "costCents"});  // what the ledger reads
  }
  if (auto meta = run.find("metadata"); meta != run.end() && meta->is_object()) {
    for (const char* unread : {"labels", "generation", "uid", "ownerReferences"})
      meta->erase(unread);
  }
}

bool settled_with_output(const Json& run) {
  return is_settled(run) && !string_view_at(run, "status/output").empty();
}

void drop_output(Json& run) {
  auto status = run.find("status");
  if (status == run.end() || !status->is_object() || !status->contains("output")) return;
  status->erase("output");
  (*status)[kStatusOutputNotCached] = true;
  HB_ASSERT_MSG(output_dropped(run), "a run whose output was dropped says so");
}

bool output_dropped(const Json& run) {
  return bool_at(run, std::string("status/") + kStatusOutputNotCached);
}

}  // namespace hb::controllers
