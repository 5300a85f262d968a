#include "tools/local_kubelet/node_object.h"

namespace hb::local_kubelet {
namespace {

Json condition(const char* type, bool status, const char* reason, const std::string& message,
               const std::string& since, const std::string& now) {
  return {{"type", type},
          {"status", status ? "True" : "False"},
          {"reason", reason},
          {"message", message},
          {"lastHeartbeatTime", now},
          {"lastTransitionTime", since}};
}

Json conditions(bool ready, const std::string& since, const std::string& now) {
  return Json::array(
      {condition("Ready", ready, ready ? "KubeletReady" : "KubeletStopped",
                 ready ? "hb-local-kubelet is running Pods as local processes"
                       : "hb-local-kubelet stopped",
                 since, now),
       condition("MemoryPressure", false, "KubeletHasSufficientMemory", "", since, now),
       condition("DiskPressure", false, "KubeletHasNoDiskPressure", "", since, now),
       condition("PIDPressure", false, "KubeletHasSufficientPID", "", since, now)});
}

Json resources(const NodeFacts& f) {
  return {{"cpu", std::to_string(f.cpus)},
          {"memory", std::to_string(f.memory_kib) + "Ki"},
          {"pods", std::to_string(f.max_pods)}};
}

}  // namespace

Json node_object(const NodeFacts& f, const std::string& now) {
  Json status = node_status_patch(f, true, now, now)["status"];
  return {{"apiVersion", "v1"},
          {"kind", "Node"},
          {"metadata",
           {{"name", f.name},
            {"labels",
             {{"kubernetes.io/hostname", f.name},
              {"kubernetes.io/os", "linux"},
              {"kubernetes.io/arch", f.architecture},
              {kNodeLabelExecutor, "true"}}},
            {"annotations",
             {{"heartbeat.dev/executor",
               "hb-local-kubelet: runs Pods as local processes (tests and the demo)"}}}}},
          {"spec", Json::object()},
          {"status", std::move(status)}};
}

Json node_status_patch(const NodeFacts& f, bool ready, const std::string& since,
                       const std::string& now) {
  return {{"status",
           {{"conditions", conditions(ready, since, now)},
            {"addresses", Json::array({{{"type", "InternalIP"}, {"address", "127.0.0.1"}},
                                       {{"type", "Hostname"}, {"address", f.name}}})},
            {"capacity", resources(f)},
            {"allocatable", resources(f)},
            {"nodeInfo",
             {{"kubeletVersion", kKubeletVersion},
              {"kubeProxyVersion", ""},
              {"operatingSystem", "linux"},
              {"architecture", f.architecture},
              {"kernelVersion", f.kernel_version},
              {"osImage", "local processes"},
              {"containerRuntimeVersion", "local-process://1"},
              {"machineID", ""},
              {"systemUUID", ""},
              {"bootID", ""}}}}}};
}

}  // namespace hb::local_kubelet
