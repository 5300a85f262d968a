// The executor's Node: registered at start, its Ready condition's heartbeat
// renewed every kNodeStatusInterval, and on exit marked not ready (or deleted
// with --delete-node-on-exit).
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "kube/client.h"
#include "tools/local_kubelet/node_object.h"

namespace hb::local_kubelet {

inline constexpr std::chrono::seconds kNodeStatusInterval{10};
inline const kube::Resource kNodes{"", "v1", "nodes", false};

class NodeAgent {
 public:
  NodeAgent(std::shared_ptr<kube::Client> client, NodeFacts facts);
  // Registers or refreshes the node when due; logs and retries failures.
  void tick(std::chrono::steady_clock::time_point now);
  void shutdown(bool delete_node);

  static NodeFacts local_facts(const std::string& name, int max_pods);

 private:
  std::shared_ptr<kube::Client> client_;
  NodeFacts facts_;
  bool registered_ = false;
  std::string ready_since_;
  std::chrono::steady_clock::time_point next_{};
};

}  // namespace hb::local_kubelet
