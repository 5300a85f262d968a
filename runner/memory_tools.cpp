#include "runner/memory_tools.h"

#include "runner/limits.h"

namespace hb::runner {

CoreMemoryService::CoreMemoryService(MemoryBlocks spec_blocks, MemoryStore* store)
    : spec_(std::move(spec_blocks)), store_(store), blocks_(spec_) {}

void CoreMemoryService::load() {
  if (!store_) return;
  auto snapshot = store_->load();
  std::lock_guard lock(mutex_);
  if (snapshot) {
    blocks_ = merge_memory_blocks(spec_, snapshot->blocks);
    resource_version_ = snapshot->resource_version;
  }
}

MemoryBlocks CoreMemoryService::blocks() const {
  std::lock_guard lock(mutex_);
  return blocks_;
}

ToolOutcome CoreMemoryService::edit(const MemoryEdit& edit) {
  std::lock_guard lock(mutex_);
  MemoryBlocks base = blocks_;
  std::string version = resource_version_;
  for (int attempt = 1;; ++attempt) {
    MemoryEditResult applied = apply_memory_edit(base, edit);
    if (auto* error = std::get_if<MemoryEditError>(&applied)) return {error->message, true};
    MemoryBlocks updated = std::get<MemoryBlocks>(std::move(applied));
    if (!store_) {
      blocks_ = std::move(updated);
      break;
    }
    try {
      resource_version_ = store_->save(updated, version);
      blocks_ = std::move(updated);
      ++saves_;
      break;
    } catch (const MemoryConflict&) {
      ++conflicts_;
      if (attempt >= kMemorySaveAttemptsMax) {
        return {"memory was changed elsewhere while saving; the edit was not saved, try again",
                true};
      }
      auto fresh = store_->load();
      base = fresh ? merge_memory_blocks(spec_, fresh->blocks) : spec_;
      version = fresh ? fresh->resource_version : std::string();
      blocks_ = base;
      resource_version_ = version;
    } catch (const std::exception& error) {
      return {
          std::string("memory could not be saved (") + error.what() + "); the edit was not applied",
          true};
    }
  }
  for (const auto& block : blocks_) {
    if (block.label == edit.label) {
      return {"block \"" + block.label + "\" updated: " + std::to_string(block_chars(block)) + "/" +
                  std::to_string(block.limit) + " characters used",
              false};
    }
  }
  return {"updated", false};
}

}  // namespace hb::runner
