// The AgentReconciler's per-agent objects: made once, the object in the way
// remembered, grants naming someone else's object removed.
#include <spdlog/spdlog.h>

#include "controllers/model/agent_grants.h"
#include "controllers/model/names.h"
#include "controllers/shell/agent_reconciler.h"
#include "kube/errors.h"

namespace hb::controllers {

bool AgentReconciler::agent_objects_known_made(const Json& agent,
                                               const std::optional<Json>* lease_read) {
  const std::string uid = string_at(agent, "metadata/uid");
  const std::string key = object_key(agent);
  {
    std::lock_guard lock(mutex_);
    if (auto it = ensured_agents_.find(key); it != ensured_agents_.end() && it->second == uid) {
      return true;
    }
  }
  // The marked Lease in the cache says so without a request (after a
  // restart, for every Agent). Once it does, this process need not
  // remember the Agent itself.
  std::optional<Json> read_here;
  if (lease_read == nullptr) {
    read_here =
        view_.lease(string_at(agent, "metadata/namespace"), lease_name_for_agent(name_of(agent)));
  }
  const std::optional<Json>& lease = lease_read != nullptr ? *lease_read : read_here;
  if (!agent_objects_made(lease ? &*lease : nullptr, uid)) return false;
  std::lock_guard lock(mutex_);
  ensured_agents_.erase(key);
  return true;
}

kube::Result<std::string> AgentReconciler::ensure_agent_objects(
    const Json& agent, const std::optional<Json>* lease_read) {
  if (agent_objects_known_made(agent, lease_read)) return std::string();
  const std::string uid = string_at(agent, "metadata/uid");
  const std::string ns = string_at(agent, "metadata/namespace");
  std::string lease_name;
  bool lease_marked = false;
  // In order, stopping at the first object in the way: no grant is made
  // before the objects it names are this Agent's (agent_grants.h).
  for (const auto& [kind, object] :
       build_agent_objects(parse_agent_spec(agent).spec, config_.job)) {
    if (kind == kKindLeases) lease_name = name_of(object);
    HB_TRY_ASSIGN(const CreatedOrFound created, writes_->create_agent_object(kind, ns, object));
    if (created.made) continue;
    const Json& existing = created.object;
    if (!controlled_by(existing, uid)) {
      if (!grants_rights(kind)) HB_TRY(remove_stale_grants(agent, kind, name_of(object)));
      return string_at(object, "kind") + " " + ns + "/" + name_of(object);
    }
    if (kind == kKindLeases) lease_marked = agent_objects_made(&existing, uid);
  }
  // Every object is there and this Agent's: mark the Lease for the next
  // restart (once per Agent, or once for a Lease made without the mark).
  if (!lease_marked) HB_TRY(mark_objects_made(ns, lease_name));
  std::lock_guard lock(mutex_);
  ensured_agents_[object_key(agent)] = uid;
  grants_checked_.erase(object_key(agent));
  return std::string();
}

// Once per Agent and object in the way (remembered until the objects are
// made): the Agent's Role naming that object and its RoleBinding, if an
// earlier version made them, are deleted, each conditional on its uid.
kube::Done AgentReconciler::remove_stale_grants(const Json& agent, const std::string& kind,
                                                const std::string& name) {
  const std::string key = object_key(agent);
  const std::string uid = string_at(agent, "metadata/uid");
  const std::string checked = uid + "/" + kind + "/" + name;
  {
    std::lock_guard lock(mutex_);
    if (auto it = grants_checked_.find(key); it != grants_checked_.end() && it->second == checked)
      return kube::done();
  }
  const std::string ns = string_at(agent, "metadata/namespace");
  const std::string grant = service_account_name(name_of(agent));
  HB_TRY_ASSIGN(const std::optional<Json> role, read_grant(kKindRoles, ns, grant));
  HB_TRY_ASSIGN(const std::optional<Json> binding, read_grant(kKindRoleBindings, ns, grant));
  const StaleGrants stale =
      stale_grants(role ? &*role : nullptr, binding ? &*binding : nullptr, kind, name, uid);
  auto remove = [&](const char* grant_kind, const Json& object) -> kube::Done {
    HB_TRY(writes_->delete_grant(grant_kind, ns, grant, string_at(object, "metadata/uid")));
    spdlog::warn("event=stale_grant_removed agent={}/{} kind={} name={} names=\"{} {}\"", ns,
                 name_of(agent), string_at(object, "kind"), grant, kind, name);
    return kube::done();
  };
  // The binding first: a Role left alone by a crash grants nothing.
  if (stale.delete_role_binding) HB_TRY(remove(kKindRoleBindings, *binding));
  if (stale.delete_role) HB_TRY(remove(kKindRoles, *role));
  std::lock_guard lock(mutex_);
  grants_checked_[key] = checked;
  return kube::done();
}

kube::Done AgentReconciler::mark_objects_made(const std::string& ns,
                                              const std::string& lease_name) {
  return writes_->mark_agent_objects_made(ns, lease_name, agent_objects_made_patch());
}

kube::Result<std::string> AgentReconciler::object_in_the_way(const Json& agent) {
  const std::string uid = string_at(agent, "metadata/uid");
  const std::string key = object_key(agent);
  {
    std::lock_guard lock(mutex_);
    auto it = in_the_way_.find(key);
    if (it == in_the_way_.end() || it->second.uid != uid) return std::string();
    if (steady_() - it->second.at < kObjectInTheWayRecheck) {
      return it->second.object;
    }
  }
  // Looked at again before the decision, so the Agent's conditions do not
  // flap to valid while the object is still there.
  HB_TRY_ASSIGN(std::string blocking, ensure_agent_objects(agent));
  std::lock_guard lock(mutex_);
  if (blocking.empty()) {
    in_the_way_.erase(key);
  } else {
    in_the_way_[key] = {uid, blocking, steady_()};
  }
  return blocking;
}

// The per-agent objects (ServiceAccount, Role, RoleBinding, Lease, memory
// ConfigMap) are made when the Agent appears, as bookkeeping, so its first
// heartbeat's dispatch is only the run and the Job. True when an object in
// the way was found (the next pass reports it).
kube::Result<bool> AgentReconciler::ensure_objects_ahead(const Json& agent,
                                                         const std::optional<Json>& lease) {
  kube::set_current_request_priority({kube::RequestClass::kBookkeeping, 0});
  HB_TRY_ASSIGN(const std::string blocking, ensure_agent_objects(agent, &lease));
  if (blocking.empty()) return false;
  std::lock_guard lock(mutex_);
  in_the_way_[object_key(agent)] = {string_at(agent, "metadata/uid"), blocking, steady_()};
  return true;
}

}  // namespace hb::controllers
