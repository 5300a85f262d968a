// Where core memory lives between heartbeats: the agent's memory ConfigMap
// (data key "blocks.json"), saved with optimistic concurrency. main() wires a
// Kubernetes implementation (kube_adapters.h); tests use an in-memory one.
#pragma once

#include <optional>
#include <stdexcept>
#include <string>

#include "runner/core_memory.h"

namespace hb::runner {

// The store changed since it was loaded (409), or it was created meanwhile.
class MemoryConflict : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct MemorySnapshot {
  MemoryBlocks blocks;
  std::string resource_version;
};

class MemoryStore {
 public:
  virtual ~MemoryStore() = default;
  // None when the ConfigMap does not exist yet. One without blocks.json
  // loads as no blocks with its resourceVersion, so a save updates it.
  virtual std::optional<MemorySnapshot> load() = 0;
  // Saves when the stored version still is expected_resource_version (empty:
  // create). Returns the new version. Throws MemoryConflict, or
  // std::runtime_error for other failures.
  virtual std::string save(const MemoryBlocks& blocks,
                           const std::string& expected_resource_version) = 0;
};

}  // namespace hb::runner
