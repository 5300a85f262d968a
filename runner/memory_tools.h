// Core memory for one heartbeat: the current blocks, edits through the
// model's core_memory_append / core_memory_replace, each saved at once so a
// later heartbeat (or a crash) keeps it. A 409 reloads, re-applies the edit on
// the fresh blocks and saves again, up to kMemorySaveAttemptsMax times.
#pragma once

#include <mutex>
#include <string>
#include <vector>

#include "runner/core_memory.h"
#include "runner/memory_store.h"
#include "runner/tool_runner.h"

namespace hb::runner {

class CoreMemoryService {
 public:
  // store may be null: edits then last only for this heartbeat.
  CoreMemoryService(MemoryBlocks spec_blocks, MemoryStore* store);

  // Loads the stored blocks and merges them with the spec's; the store's
  // Error when it cannot (the spec's blocks stand).
  kube::Done load();

  ToolOutcome edit(const MemoryEdit& edit);
  MemoryBlocks blocks() const;
  int saves() const { return saves_; }
  int conflicts() const { return conflicts_; }

 private:
  MemoryBlocks spec_;
  MemoryStore* store_;
  mutable std::mutex mutex_;
  MemoryBlocks blocks_;
  std::string resource_version_;
  int saves_ = 0;
  int conflicts_ = 0;
};

}  // namespace hb::runner
