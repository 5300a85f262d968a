// Where core memory lives between heartbeats: the agent's memory ConfigMap
// (data key "blocks.json"), saved with optimistic concurrency. main() wires a
// Kubernetes implementation (kube_adapters.h); tests use an in-memory one.
#pragma once

#include <optional>
#include <string>

#include "kube/errors.h"
#include "runner/core_memory.h"

namespace hb::runner {

// A save's Error when the store changed since it was loaded (409), or it
// was created meanwhile (AlreadyExists): load again and re-apply.
inline bool is_memory_conflict(const kube::Error& error) {
  return error.kind == kube::ErrorKind::kConflict || error.kind == kube::ErrorKind::kAlreadyExists;
}

struct MemorySnapshot {
  MemoryBlocks blocks;
  std::string resource_version;
};

class MemoryStore {
 public:
  virtual ~MemoryStore() = default;
  // None when the ConfigMap does not exist yet. One without blocks.json
  // loads as no blocks with its resourceVersion, so a save updates it.
  virtual kube::Result<std::optional<MemorySnapshot>> load() = 0;
  // Saves when the stored version still is expected_resource_version (empty:
  // create). Returns the new version, or an Error (is_memory_conflict: the
  // store moved on).
  virtual kube::Result<std::string> save(const MemoryBlocks& blocks,
                                         const std::string& expected_resource_version) = 0;
};

}  // namespace hb::runner
