// An object's identity (metadata.name, metadata.namespace and
// metadata.resourceVersion) left out of the text a store keeps, and put
// back when the text is read: the entry's key ("namespace/name") and
// resourceVersion already hold them, and in the text they are its least
// compressible part (a name and a revision differ in every object: about
// 16 of a settled run's 78 compressed bytes). Pure.
#pragma once

#include <nlohmann/json.hpp>
#include <string_view>

namespace hb::kube {

// Takes the three members out of `object` when putting them back from
// (key, resource_version) gives exactly the object again; false (object
// untouched) otherwise: a member missing, not a string, an empty
// namespace, or a key or revision that does not match.
bool elide_identity(std::string_view key, std::string_view resource_version,
                    nlohmann::json& object);
// The reverse, for an object elide_identity changed.
void restore_identity(std::string_view key, std::string_view resource_version,
                      nlohmann::json& object);

}  // namespace hb::kube
