#include "controllers/shell/agent_api_writes.h"

#include "api/hb_assert.h"
#include "controllers/model/agent_grants.h"
#include "controllers/run/cache_projection.h"
#include "kube/request_priority.h"
#include "kube/resource.h"

namespace hb::controllers {

namespace {

using kube::ErrorKind;
namespace res = kube::resources;

}  // namespace

void count_api_write(Metrics& metrics, const char* kind) {
  metrics.counter_add("heartbeat_api_writes_total", {{"kind", kind}});
  const kube::RequestClass cls = kube::current_request_priority().cls;
  metrics.counter_add("heartbeat_api_writes_by_class_total",
                      {{"class", std::string(kube::request_class_name(cls))}});
}

KubeAgentApiWrites::KubeAgentApiWrites(std::shared_ptr<kube::Client> client, WriteOverlay& overlay,
                                       Metrics& metrics)
    : client_(std::move(client)), overlay_(overlay), metrics_(metrics) {
  HB_ASSERT_MSG(client_ != nullptr, "the writes go to an API server");
}

kube::Result<CreatedOrFound> KubeAgentApiWrites::create_or_find(const kube::Resource& resource,
                                                                const std::string& ns,
                                                                const Json& object) {
  kube::Result<Json> created = client_->create(resource, ns, object);
  if (created.ok()) return CreatedOrFound{std::move(created).value(), true};
  if (!created.is(ErrorKind::kAlreadyExists)) return std::move(created).error();
  HB_TRY_ASSIGN(Json existing, client_->get(resource, ns, name_of(object)));
  return CreatedOrFound{std::move(existing), false};
}

kube::Result<Json> KubeAgentApiWrites::create_run(const std::string& ns, const Json& run) {
  HB_TRY_ASSIGN(Json created, client_->create(res::kHeartbeatRuns, ns, run));
  count_api_write(metrics_, kWriteRunCreate);
  overlay_.put(kOverlayRuns, created);
  return created;
}

kube::Result<CreatedOrFound> KubeAgentApiWrites::create_or_find_run(const std::string& ns,
                                                                    const Json& run) {
  HB_TRY_ASSIGN(CreatedOrFound result, create_or_find(res::kHeartbeatRuns, ns, run));
  if (result.made) {
    count_api_write(metrics_, kWriteRunCreate);
    overlay_.put(kOverlayRuns, result.object);
  }
  return result;
}

kube::Result<Json> KubeAgentApiWrites::patch_run(const std::string& ns, const std::string& name,
                                                 const Json& patch, const char* write_kind) {
  HB_TRY_ASSIGN(Json patched, client_->merge_patch(res::kHeartbeatRuns, ns, name, patch));
  overlay_.put(kOverlayRuns, patched);
  count_api_write(metrics_, write_kind);
  return patched;
}

kube::Result<Json> KubeAgentApiWrites::adopt_run(const std::string& ns, const std::string& name,
                                                 const Json& patch) {
  return patch_run(ns, name, patch, kWriteRunAdopt);
}

kube::Result<Json> KubeAgentApiWrites::label_run(const std::string& ns, const std::string& name,
                                                 const Json& patch) {
  return patch_run(ns, name, patch, kWriteRunLabel);
}

kube::Result<Json> KubeAgentApiWrites::patch_run_status(const std::string& ns,
                                                        const std::string& name,
                                                        const Json& patch) {
  HB_TRY_ASSIGN(Json updated, client_->merge_patch_status(res::kHeartbeatRuns, ns, name, patch));
  count_api_write(metrics_, kWriteRunStatus);
  overlay_.put(kOverlayRuns, updated);
  return updated;
}

// Gone already is done too (false: this call deleted nothing); either way
// the overlay forgets it.
kube::Result<bool> KubeAgentApiWrites::delete_in_background(const kube::Resource& resource,
                                                            const std::string& ns,
                                                            const std::string& name,
                                                            const char* overlay_kind) {
  kube::DeleteOptions options;
  options.propagation_policy = "Background";
  HB_TRY_ASSIGN(const bool removed, remove_if_present(resource, ns, name, options));
  overlay_.erase(overlay_kind, object_key(ns, name));
  return removed;
}

kube::Result<bool> KubeAgentApiWrites::remove_if_present(const kube::Resource& resource,
                                                         const std::string& ns,
                                                         const std::string& name,
                                                         const kube::DeleteOptions& options) {
  kube::Result<Json> removed = client_->remove(resource, ns, name, options);
  if (!removed.ok() && !removed.is(ErrorKind::kNotFound)) return std::move(removed).error();
  return removed.ok();
}

kube::Result<bool> KubeAgentApiWrites::delete_run(const std::string& ns, const std::string& name) {
  HB_TRY_ASSIGN(const bool deleted,
                delete_in_background(res::kHeartbeatRuns, ns, name, kOverlayRuns));
  if (deleted) count_api_write(metrics_, kWriteRunDelete);
  return deleted;
}

kube::Result<CreatedOrFound> KubeAgentApiWrites::create_context(const std::string& ns,
                                                                const Json& config_map) {
  HB_TRY_ASSIGN(CreatedOrFound result, create_or_find(res::kConfigMaps, ns, config_map));
  if (result.made) count_api_write(metrics_, kWriteContextCreate);
  return result;
}

// A Job made is remembered in the shape the cache keeps.
kube::Result<CreatedOrFound> KubeAgentApiWrites::create_job(const std::string& ns,
                                                            const Json& job) {
  HB_TRY_ASSIGN(CreatedOrFound result, create_or_find(res::kJobs, ns, job));
  if (result.made) {
    count_api_write(metrics_, kWriteJobCreate);
    Json seen = result.object;
    project_job(seen);
    overlay_.put(kOverlayJobs, std::move(seen));
  }
  return result;
}

kube::Result<Json> KubeAgentApiWrites::hand_over_job(const std::string& ns, const std::string& name,
                                                     const Json& patch) {
  HB_TRY_ASSIGN(Json patched, client_->merge_patch(res::kJobs, ns, name, patch));
  count_api_write(metrics_, kWriteJobHandOver);
  Json seen = patched;
  project_job(seen);
  overlay_.put(kOverlayJobs, std::move(seen));
  return patched;
}

kube::Result<bool> KubeAgentApiWrites::delete_job(const std::string& ns, const std::string& name) {
  HB_TRY_ASSIGN(const bool deleted, delete_in_background(res::kJobs, ns, name, kOverlayJobs));
  if (deleted) count_api_write(metrics_, kWriteJobDelete);
  return deleted;
}

kube::Result<Json> KubeAgentApiWrites::replace_agent_status(const std::string& ns,
                                                            const std::string& name,
                                                            const Json& agent) {
  HB_TRY_ASSIGN(Json updated, client_->replace_status(res::kAgents, ns, name, agent));
  count_api_write(metrics_, kWriteAgentStatus);
  overlay_.put(kOverlayAgents, updated);
  return updated;
}

kube::Result<CreatedOrFound> KubeAgentApiWrites::create_agent_object(const std::string& kind,
                                                                     const std::string& ns,
                                                                     const Json& object) {
  HB_TRY_ASSIGN(CreatedOrFound result, create_or_find(agent_object_resource(kind), ns, object));
  if (result.made) count_api_write(metrics_, kWriteAgentObjectCreate);
  return result;
}

kube::Done KubeAgentApiWrites::mark_agent_objects_made(const std::string& ns,
                                                       const std::string& lease_name,
                                                       const Json& patch) {
  HB_TRY(client_->merge_patch(res::kLeases, ns, lease_name, patch));
  count_api_write(metrics_, kWriteAgentObjectMark);
  return kube::done();
}

kube::Result<bool> KubeAgentApiWrites::delete_grant(const std::string& kind, const std::string& ns,
                                                    const std::string& name,
                                                    const std::string& uid) {
  HB_ASSERT_MSG(kind == kKindRoles || kind == kKindRoleBindings, "only grants are deleted");
  kube::DeleteOptions options;
  options.precondition_uid = uid;
  HB_TRY_ASSIGN(const bool removed,
                remove_if_present(agent_object_resource(kind), ns, name, options));
  if (removed) count_api_write(metrics_, kWriteAgentGrantDelete);
  return removed;
}

kube::Done KubeAgentApiWrites::create_event(const std::string& ns, const Json& event) {
  HB_TRY(client_->create(res::kEvents, ns, event));
  count_api_write(metrics_, kWriteEvent);
  return kube::done();
}

}  // namespace hb::controllers
