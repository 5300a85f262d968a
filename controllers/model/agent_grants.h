// Ownership before grants. The per-agent Role and RoleBinding (and the
// ServiceAccount they bind) give a heartbeat Pod writes on the agent's Lease
// and memory ConfigMap by name; anyone who may create Pods in the namespace
// may run a Pod as that ServiceAccount. So they exist only while both named
// objects exist and are this Agent's own: those two are made (or found owned)
// first, the grants after, and a grant found for an object someone else owns
// is removed. Pure: JSON in, decisions out.
#pragma once

#include <string>
#include <string_view>

#include "controllers/model/json_util.h"
#include "kube/resource.h"

namespace hb::controllers {

// build_agent_objects' kinds (resource plurals).
inline constexpr const char* kKindConfigMaps = "configmaps";
inline constexpr const char* kKindLeases = "leases";
inline constexpr const char* kKindServiceAccounts = "serviceaccounts";
inline constexpr const char* kKindRoles = "roles";
inline constexpr const char* kKindRoleBindings = "rolebindings";

// The API resource of one of the kinds above.
const kube::Resource& agent_object_resource(std::string_view kind);

// True for the objects that grant rights (ServiceAccount, Role,
// RoleBinding); false for those the Role names (Lease, memory ConfigMap).
bool grants_rights(std::string_view kind);

// True when `object` carries an ownerReference to `uid` marked controller:
// the only way the operator takes an object as an Agent's own.
bool controlled_by(const Json& object, std::string_view uid);

// True when one of `role`'s rules names the object `name` of resource
// `kind` (a plural) by resourceNames.
bool role_names(const Json& role, std::string_view kind, std::string_view name);

// What to remove when an object the Agent's Role would name (`kind`,
// `name`) belongs to someone else. `role` and `binding` are the Agent's
// Role and RoleBinding as read (null: not there). Only what this Agent
// controls is ever removed: its Role when it names that object, and its
// RoleBinding when it binds that Role (or a Role that is gone).
struct StaleGrants {
  bool delete_role_binding = false;
  bool delete_role = false;
  bool any() const { return delete_role_binding || delete_role; }
};
StaleGrants stale_grants(const Json* role, const Json* binding, std::string_view kind,
                         std::string_view name, std::string_view agent_uid);

}  // namespace hb::controllers
