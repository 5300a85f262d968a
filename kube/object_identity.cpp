#include "kube/object_identity.h"

namespace hb::kube {

namespace {

struct KeyParts {
  std::string_view ns, name;  // ns empty: cluster-scoped
};

// Names and namespaces never hold '/', so the first one splits a key.
KeyParts split_key(std::string_view key) {
  const std::size_t slash = key.find('/');
  if (slash == std::string_view::npos) return {{}, key};
  return {key.substr(0, slash), key.substr(slash + 1)};
}

bool string_member_is(const nlohmann::json& meta, const char* member, std::string_view want) {
  auto it = meta.find(member);
  return it != meta.end() && it->is_string() && it->get_ref<const std::string&>() == want;
}

}  // namespace

bool elide_identity(std::string_view key, std::string_view resource_version,
                    nlohmann::json& object) {
  if (!object.is_object() || resource_version.empty()) return false;
  auto meta = object.find("metadata");
  if (meta == object.end() || !meta->is_object()) return false;
  const KeyParts parts = split_key(key);
  if (parts.name.empty() || !string_member_is(*meta, "name", parts.name)) return false;
  if (!string_member_is(*meta, "resourceVersion", resource_version)) return false;
  if (parts.ns.empty() ? meta->contains("namespace")
                       : !string_member_is(*meta, "namespace", parts.ns)) {
    return false;
  }
  meta->erase("name");
  meta->erase("namespace");
  meta->erase("resourceVersion");
  return true;
}

void restore_identity(std::string_view key, std::string_view resource_version,
                      nlohmann::json& object) {
  nlohmann::json& meta = object["metadata"];
  const KeyParts parts = split_key(key);
  meta["name"] = parts.name;
  if (!parts.ns.empty()) meta["namespace"] = parts.ns;
  meta["resourceVersion"] = resource_version;
}

}  // namespace hb::kube
