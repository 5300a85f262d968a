#include "controllers/run/cache_projection.h"

#include <initializer_list>
#include <memory>

#include "api/hb_assert.h"
#include "api/heartbeat_pod.h"
#include "controllers/model/names.h"
#include "controllers/model/run_view.h"
#include "controllers/run/run_after_job.h"
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

// The metadata both keep, as members and as a text cut (keep the two alike).
constexpr std::initializer_list<const char*> kMetadataKept = {
    "name",   "namespace",      "uid", "resourceVersion", "creationTimestamp", "deletionTimestamp",
    "labels", "ownerReferences"};
constexpr std::initializer_list<const char*> kAnnotationsKept = {
    kAnnotationAgentName, kAnnotationRunName, kAnnotationStartedAt, kAnnotationAgentUid,
    kAnnotationRunToMake};

kube::TextCut members_whole(std::initializer_list<const char*> names) {
  kube::TextCut cut;
  for (const char* name : names) cut.members.push_back({name, {}});
  return cut;
}

kube::TextCut shell_cut() {
  kube::TextCut metadata = members_whole(kMetadataKept);
  metadata.members.push_back({"annotations", members_whole(kAnnotationsKept)});
  return {{"apiVersion", {}}, {"kind", {}}, {"metadata", std::move(metadata)}};
}

Json projected_metadata(Json& metadata) {
  Json out = take(metadata, kMetadataKept);
  if (auto annotations = metadata.find("annotations"); annotations != metadata.end()) {
    Json kept = take(*annotations, kAnnotationsKept);
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

constexpr std::initializer_list<const char*> kJobTemplateAnnotationsKept = {kAnnotationPolicies,
                                                                            kAnnotationBudgetHold};
constexpr std::initializer_list<const char*> kJobStatusKept = {"conditions"};
constexpr std::initializer_list<const char*> kPodStatusKept = {"phase", "reason", "conditions",
                                                               "containerStatuses"};

}  // namespace

std::shared_ptr<const kube::TextCut> job_text_cut() {
  static const auto cut = std::make_shared<const kube::TextCut>([] {
    kube::TextCut out = shell_cut();
    kube::TextCut template_metadata{{"annotations", members_whole(kJobTemplateAnnotationsKept)}};
    kube::TextCut spec{{"template", kube::TextCut{{"metadata", std::move(template_metadata)}}}};
    out.members.push_back({"spec", std::move(spec)});
    out.members.push_back({"status", members_whole(kJobStatusKept)});
    return out;
  }());
  return cut;
}

std::shared_ptr<const kube::TextCut> pod_text_cut() {
  static const auto cut = std::make_shared<const kube::TextCut>([] {
    kube::TextCut out = shell_cut();
    out.members.push_back({"status", members_whole(kPodStatusKept)});
    // project_pod reads these by name: the cut must keep each.
    const kube::TextCut* status = out.find("status");
    HB_ASSERT(status != nullptr && status->find("phase") != nullptr &&
              status->find("reason") != nullptr && status->find("conditions") != nullptr &&
              status->find("containerStatuses") != nullptr);
    return out;
  }());
  return cut;
}

void project_job(Json& job) {
  if (!job.is_object()) return;
  Json out = projected_shell(job);
  // The admitting policies' trusted copy (run_record.h admitting_policies)
  // and the cents held for the run (budget_hold_ahead.h).
  if (const Json* annotations = find_path(job, "spec/template/metadata/annotations");
      annotations != nullptr && annotations->is_object()) {
    for (const char* key : kJobTemplateAnnotationsKept) {
      if (auto kept = annotations->find(key); kept != annotations->end()) {
        out["spec"]["template"]["metadata"]["annotations"][key] = *kept;
      }
    }
  }
  if (auto status = job.find("status"); status != job.end()) {
    Json kept = take(*status, kJobStatusKept);
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
  HB_ASSERT_MSG(is_settled(run), "the projection keeps what makes a run settled");
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
