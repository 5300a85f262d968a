// Names a Kubernetes resource type and builds its REST paths.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace hb::kube {

struct Resource {
  std::string group;     // "" for the core group
  std::string version;   // "v1", "v1alpha1"
  std::string resource;  // plural: "pods", "agents"
  bool namespaced = true;

  std::string api_version() const { return group.empty() ? version : group + "/" + version; }
  std::string describe() const { return group.empty() ? resource : resource + "." + group; }
  // "/api/v1/namespaces/ns/pods[/name]" or "/apis/g/v/..."; ns "" = all
  // namespaces. ns and name are percent-encoded; check them with
  // path_segment_problem first (an encoded '/' is still a '/' to the server).
  std::string path(const std::string& ns, const std::string& name = "") const;
};

namespace resources {
inline const Resource kAgents{"heartbeat.dev", "v1alpha1", "agents"};
inline const Resource kHeartbeatRuns{"heartbeat.dev", "v1alpha1", "heartbeatruns"};
inline const Resource kHeartbeatPolicies{"heartbeat.dev", "v1alpha1", "heartbeatpolicies"};
inline const Resource kJobs{"batch", "v1", "jobs"};
inline const Resource kPods{"", "v1", "pods"};
inline const Resource kConfigMaps{"", "v1", "configmaps"};
inline const Resource kSecrets{"", "v1", "secrets"};
inline const Resource kServiceAccounts{"", "v1", "serviceaccounts"};
inline const Resource kEvents{"", "v1", "events"};
inline const Resource kNamespaces{"", "v1", "namespaces", false};
inline const Resource kLeases{"coordination.k8s.io", "v1", "leases"};
inline const Resource kRoles{"rbac.authorization.k8s.io", "v1", "roles"};
inline const Resource kRoleBindings{"rbac.authorization.k8s.io", "v1", "rolebindings"};
inline const Resource kCustomResourceDefinitions{"apiextensions.k8s.io", "v1",
                                                 "customresourcedefinitions", false};
// The metrics endpoint's reviews (operator/metrics_auth.h): create only.
inline const Resource kTokenReviews{"authentication.k8s.io", "v1", "tokenreviews", false};
inline const Resource kSubjectAccessReviews{"authorization.k8s.io", "v1", "subjectaccessreviews",
                                            false};
}  // namespace resources

// Percent-encodes a path segment or a query value: every byte but
// RFC 3986's unreserved ones (label selectors carry '=', ',', '!').
std::string url_encode(std::string_view value);

// Why `segment` may not be a namespace or name in a request path (as
// client-go and the API server's IsValidPathSegmentName: "." and "..",
// '/' and '%'; and no byte outside printable ASCII), or nullopt. Empty is
// allowed: it means the collection.
std::optional<std::string> path_segment_problem(std::string_view segment);

}  // namespace hb::kube
