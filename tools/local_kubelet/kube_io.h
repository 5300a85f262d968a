// The executor's reads and writes beyond Pods: ConfigMap/Secret lookups for a
// Pod's env and volumes, and the service account's token Secret.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "kube/client.h"

namespace hb::local_kubelet {

// The object, or nullopt on NotFound; any other failure throws.
std::optional<nlohmann::json> get_if_exists(kube::Client& client, const kube::Resource& resource,
                                            const std::string& ns, const std::string& name);

// The token of the service account's kubernetes.io/service-account-token
// Secret (Kubernetes 1.20 creates it and lists it in the account's
// `secrets`), or nullopt while it does not exist yet. Like a failed read, a
// token that is not base64 throws.
std::optional<std::string> service_account_token(kube::Client& client, const std::string& ns,
                                                 const std::string& account);

// Current UTC time as RFC 3339 with seconds, as metav1.Time is written.
std::string now_rfc3339();

}  // namespace hb::local_kubelet
