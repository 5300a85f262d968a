#include "controllers/model/agent_grants.h"

#include "api/hb_assert.h"

namespace hb::controllers {

namespace {

bool contains(const Json* list, std::string_view value) {
  if (list == nullptr || !list->is_array()) return false;
  for (const Json& item : *list) {
    if (item.is_string() && item.get<std::string_view>() == value) return true;
  }
  return false;
}

}  // namespace

const kube::Resource& agent_object_resource(std::string_view kind) {
  namespace res = kube::resources;
  if (kind == kKindServiceAccounts) return res::kServiceAccounts;
  if (kind == kKindRoles) return res::kRoles;
  if (kind == kKindRoleBindings) return res::kRoleBindings;
  if (kind == kKindLeases) return res::kLeases;
  HB_ASSERT_MSG(kind == kKindConfigMaps, "a per-agent object is one of the five kinds");
  return res::kConfigMaps;
}

bool grants_rights(std::string_view kind) {
  const bool grants =
      kind == kKindServiceAccounts || kind == kKindRoles || kind == kKindRoleBindings;
  HB_ASSERT_MSG(grants || kind == kKindConfigMaps || kind == kKindLeases,
                "a per-agent object is one of the five kinds");
  return grants;
}

bool controlled_by(const Json& object, std::string_view uid) {
  if (uid.empty()) return false;
  const Json* owners = find_path(object, "metadata/ownerReferences");
  if (owners == nullptr || !owners->is_array()) return false;
  for (const Json& owner : *owners) {
    const Json* controller = find_path(owner, "controller");
    if (string_at(owner, "uid") == uid && controller != nullptr && controller->is_boolean() &&
        controller->get<bool>()) {
      return true;
    }
  }
  return false;
}

bool role_names(const Json& role, std::string_view kind, std::string_view name) {
  const Json* rules = find_path(role, "rules");
  if (rules == nullptr || !rules->is_array()) return false;
  for (const Json& rule : *rules) {
    if (contains(find_path(rule, "resources"), kind) &&
        contains(find_path(rule, "resourceNames"), name)) {
      return true;
    }
  }
  return false;
}

StaleGrants stale_grants(const Json* role, const Json* binding, std::string_view kind,
                         std::string_view name, std::string_view agent_uid) {
  HB_ASSERT_MSG(kind == kKindConfigMaps || kind == kKindLeases,
                "only an object the Role names is found foreign here");
  StaleGrants out;
  out.delete_role =
      role != nullptr && controlled_by(*role, agent_uid) && role_names(*role, kind, name);
  if (binding != nullptr && controlled_by(*binding, agent_uid)) {
    const bool binds_role = string_at(*binding, "roleRef/kind") == "Role" &&
                            (role == nullptr || string_at(*binding, "roleRef/name") ==
                                                    string_at(*role, "metadata/name"));
    out.delete_role_binding = binds_role && (role == nullptr || out.delete_role);
  }
  return out;
}

}  // namespace hb::controllers
