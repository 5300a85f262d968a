#include "controllers/run/run_after_job.h"

#include "api/hb_assert.h"
#include "api/trace_context.h"
#include "controllers/model/names.h"
#include "controllers/run/run_record.h"

namespace hb::controllers {

namespace {

// What the annotation keeps of a run: its identity and spec, nothing the
// API server sets.
Json to_make(const Json& run) {
  Json metadata = Json::object();
  for (const char* key : {"name", "namespace", "labels", "annotations"}) {
    if (const Json* value = find_path(run, std::string("metadata/") + key)) {
      metadata[key] = *value;
    }
  }
  return {{"apiVersion", kApiVersion},
          {"kind", kRunKind},
          {"metadata", std::move(metadata)},
          {"spec", run.value("spec", Json::object())}};
}

bool carried_matches_job(const Json& run, const Json& job) {
  const std::string name = name_of(run);
  return !name.empty() && job_name_for_run(name) == name_of(job) &&
         string_at(run, "apiVersion") == kApiVersion && string_at(run, "kind") == kRunKind &&
         namespace_of(run) == namespace_of(job) &&
         string_at(run, "spec/agentRef/name") == annotation_at(job, kAnnotationAgentName) &&
         !annotation_at(job, kAnnotationAgentUid).empty() &&
         annotation_at(run, kAnnotationAgentUid) == annotation_at(job, kAnnotationAgentUid);
}

const Json* listed(const std::vector<Json>& runs, const std::string& name) {
  for (const Json& run : runs) {
    if (name_of(run) == name) return &run;
  }
  return nullptr;
}

}  // namespace

void trace_before_uid(Json& run) {
  HB_ASSERT_MSG(string_at(run, "metadata/uid").empty(), "a stored run is traced by its uid");
  Json& annotations = run["metadata"]["annotations"];
  if (!annotations.is_object()) annotations = Json::object();
  annotations[kAnnotationTraceId] =
      api::derived_trace_uid(namespace_of(run) + "/" + name_of(run) + "/" +
                             std::string(annotation_at(run, kAnnotationAgentUid)));
}

std::optional<std::string> run_to_make_text(const Json& run) {
  HB_ASSERT_MSG(!name_of(run).empty(), "a run made after its Job is named before it");
  std::string text = to_make(run).dump();
  if (text.size() > kRunToMakeBytesMax) return std::nullopt;
  return text;
}

bool awaits_its_run(const Json& job) {
  const Json* annotations = find_path(job, "metadata/annotations");
  return annotations != nullptr && annotations->is_object() &&
         annotations->contains(kAnnotationRunToMake);
}

std::optional<Json> run_carried_by(const Json& job) {
  const std::string text(annotation_at(job, kAnnotationRunToMake));
  if (text.empty() || text.size() > kRunToMakeBytesMax) return std::nullopt;
  Json run = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (run.is_discarded() || !run.is_object() || !carried_matches_job(run, job)) {
    return std::nullopt;
  }
  return to_make(run);
}

bool carries_run(const Json& job, const Json& run) {
  const std::optional<Json> carried = run_carried_by(job);
  return carried && name_of(*carried) == name_of(run) &&
         run_of_agent(run, annotation_at(job, kAnnotationAgentUid));
}

Json job_handover_patch(const Json& run) {
  HB_ASSERT_MSG(!string_at(run, "metadata/uid").empty(), "a Job is handed to a stored run");
  const Json owner = {{"apiVersion", kApiVersion},
                      {"kind", kRunKind},
                      {"name", name_of(run)},
                      {"uid", string_at(run, "metadata/uid")},
                      {"controller", true}};
  return {{"metadata",
           {{"ownerReferences", Json::array({owner})},
            {"annotations", {{kAnnotationRunToMake, nullptr}}}}}};
}

std::vector<JobRunStep> plan_runs_for_jobs(const std::vector<Json>& jobs,
                                           const std::vector<Json>& runs) {
  std::vector<JobRunStep> steps;
  for (const Json& job : jobs) {
    HB_ASSERT_MSG(awaits_its_run(job), "only a Job awaiting its run is planned for");
    std::optional<Json> carried = run_carried_by(job);
    if (!carried) continue;  // not a text the operator wrote: not its Job to touch
    const std::string run_name = name_of(*carried);
    const Json* stored = listed(runs, run_name);
    if (stored != nullptr && !carries_run(job, *stored)) {
      steps.push_back({JobRunStepKind::kDeleteJob, name_of(job), "", Json()});
      continue;
    }
    if (stored == nullptr) {
      steps.push_back({JobRunStepKind::kMakeRun, name_of(job), run_name, std::move(*carried)});
    }
    steps.push_back({JobRunStepKind::kHandOver, name_of(job), run_name, Json()});
  }
  HB_ASSERT(steps.size() <= 2 * jobs.size());
  return steps;
}

}  // namespace hb::controllers
