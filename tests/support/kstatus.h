// kstatus's documented rules for a custom resource (sigs.k8s.io/cli-utils
// pkg/kstatus, what Flux's health checks and `kpt live status` use), written
// from its README so tests can ask what a GitOps tool will conclude about an
// object taken from the control plane:
//   1. metadata.deletionTimestamp set                      -> Terminating
//   2. status.observedGeneration present and != generation -> InProgress
//   3. a condition Reconciling=True                        -> InProgress
//   4. a condition Stalled=True                            -> Failed
//   5. otherwise                                           -> Current
// kstatus reads no Ready condition for custom resources; Ready is for people
// and for tools (Argo CD) that do, so a Current object must also be Ready.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace hb::testing {

struct KStatus {
  std::string status;  // Current | InProgress | Failed | Terminating
  std::string message;
};

inline KStatus kstatus_of(const nlohmann::json& object) {
  const nlohmann::json empty = nlohmann::json::object();
  const nlohmann::json& metadata = object.contains("metadata") ? object["metadata"] : empty;
  const nlohmann::json& status = object.contains("status") ? object["status"] : empty;
  if (metadata.contains("deletionTimestamp") && !metadata["deletionTimestamp"].is_null()) {
    return {"Terminating", "resource scheduled for deletion"};
  }
  if (metadata.contains("generation") && status.contains("observedGeneration") &&
      status["observedGeneration"] != metadata["generation"]) {
    return {"InProgress", "generation " + metadata["generation"].dump() +
                              ", latest observed generation " +
                              status["observedGeneration"].dump()};
  }
  if (status.contains("conditions") && status["conditions"].is_array()) {
    for (const nlohmann::json& c : status["conditions"]) {
      if (c.value("status", "") != "True") continue;
      if (c.value("type", "") == "Reconciling") return {"InProgress", c.value("message", "")};
      if (c.value("type", "") == "Stalled") return {"Failed", c.value("message", "")};
    }
  }
  return {"Current", "resource is current"};
}

}  // namespace hb::testing
