#include "runner/memory_tools.h"

#include "runner/limits.h"

namespace hb::runner {
namespace {

ToolOutcome not_saved(const kube::Error& error) {
  return {"memory could not be saved (" + error.describe() + "); the edit was not applied", true};
}

}  // namespace

CoreMemoryService::CoreMemoryService(MemoryBlocks spec_blocks, MemoryStore* store)
    : spec_(std::move(spec_blocks)), store_(store), blocks_(spec_) {}

kube::Done CoreMemoryService::load() {
  if (!store_) return kube::done();
  HB_TRY_ASSIGN(std::optional<MemorySnapshot> snapshot, store_->load());
  std::lock_guard lock(mutex_);
  if (snapshot) {
    blocks_ = merge_memory_blocks(spec_, snapshot->blocks);
    resource_version_ = snapshot->resource_version;
  }
  return kube::done();
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
    kube::Result<std::string> saved = store_->save(updated, version);
    if (saved.ok()) {
      resource_version_ = std::move(saved).value();
      blocks_ = std::move(updated);
      ++saves_;
      break;
    }
    if (!is_memory_conflict(saved.error())) return not_saved(saved.error());
    ++conflicts_;
    if (attempt >= kMemorySaveAttemptsMax) {
      return {"memory was changed elsewhere while saving; the edit was not saved, try again", true};
    }
    kube::Result<std::optional<MemorySnapshot>> fresh = store_->load();
    if (!fresh.ok()) return not_saved(fresh.error());
    const std::optional<MemorySnapshot>& stored = fresh.value();
    base = stored ? merge_memory_blocks(spec_, stored->blocks) : spec_;
    version = stored ? stored->resource_version : std::string();
    blocks_ = base;
    resource_version_ = version;
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
