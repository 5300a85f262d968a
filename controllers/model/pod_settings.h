// The Pod settings a real cluster needs, from an Agent's spec.runtime over
// the operator's fleet-wide defaults (--pod-defaults, the chart's
// podDefaults): imagePullSecrets, nodeSelector, tolerations, affinity,
// priorityClassName, podLabels, podAnnotations, and extra volumes mounted
// into the runner (runtime.volumeMounts) or the tools container
// (runtime.tools.volumeMounts). Pure.
//
// None of them can loosen the Pod: no securityContext is offered, a volume
// must be of a type the restricted Pod Security Standard allows, a mount may
// not name or shadow a volume or path the operator uses (the ServiceAccount
// token must never reach the tools container), and labels or annotations
// may not take the operator's keys.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "controllers/model/json_util.h"

namespace hb::controllers {

// The Pod's own volumes (besides api/heartbeat_pod.h's): check_pod_settings
// keeps the user's extra volumes off these names.
inline constexpr const char* kContextVolume = "context";
inline constexpr const char* kTmpVolume = "tmp";

// The fields a fleet default may set (an Agent's own value replaces it;
// podLabels and podAnnotations merge, the Agent's keys winning).
inline constexpr const char* kPodDefaultFields[] = {
    "imagePullSecrets",  "nodeSelector", "tolerations",   "affinity",
    "priorityClassName", "podLabels",    "podAnnotations"};
// The user's pod annotations together (the context annotation needs room
// under the API server's 256 KiB per object).
inline constexpr std::size_t kPodAnnotationsBytesMax = 16 * 1024;
inline constexpr std::size_t kExtraVolumesMax = 16;

// Each error names the field under `prefix` ("spec.runtime" for an Agent,
// "--pod-defaults" for the operator's flag) and says what would be accepted.
std::vector<std::string> check_pod_settings(const Json& runtime, std::string_view prefix);

// The settings a heartbeat Pod gets: the Agent's spec.runtime over `defaults`.
Json effective_pod_settings(const Json& runtime, const Json& defaults);

// Puts `settings` into a built Job's pod template. `containers[0]` is the
// runner, `containers[1]` (when present) the tools container.
void apply_pod_settings(const Json& settings, Json& template_metadata, Json& pod_spec);

}  // namespace hb::controllers
