// Pure: the Node object hb-local-kubelet registers and the status patch that
// keeps its heartbeat fresh.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace hb::local_kubelet {

using Json = nlohmann::json;

inline constexpr const char* kNodeLabelExecutor = "heartbeat.dev/local-executor";
inline constexpr const char* kKubeletVersion = "v1.20.2-hb-local";

struct NodeFacts {
  std::string name;
  int max_pods = 0;
  int cpus = 1;
  long long memory_kib = 0;
  std::string kernel_version;
  std::string architecture;  // amd64, arm64, ...
};

Json node_object(const NodeFacts& facts, const std::string& now);
// status.conditions (Ready etc.) with lastHeartbeatTime = now; `since` is the
// lastTransitionTime. ready = false says the executor stopped.
Json node_status_patch(const NodeFacts& facts, bool ready, const std::string& since,
                       const std::string& now);

}  // namespace hb::local_kubelet
