// An in-memory MemoryStore with resource versions; tests can change it behind
// the runner's back (to force a 409) or make it fail.
#pragma once

#include "runner/memory_store.h"

namespace hb::fakes {

class FakeMemoryStore final : public runner::MemoryStore {
 public:
  kube::Result<std::optional<runner::MemorySnapshot>> load() override {
    ++loads;
    if (!exists) return std::optional<runner::MemorySnapshot>();
    return std::optional<runner::MemorySnapshot>(
        runner::MemorySnapshot{blocks, std::to_string(version)});
  }
  kube::Result<std::string> save(const runner::MemoryBlocks& new_blocks,
                                 const std::string& expected) override {
    ++save_attempts;
    if (fail_saves) return error(kube::ErrorKind::kForbidden, "configmaps is forbidden");
    if (conflicts_to_inject > 0) {
      --conflicts_to_inject;
      concurrent_edit();
      return error(kube::ErrorKind::kConflict, "409 Conflict");
    }
    if (expected.empty() ? exists : expected != std::to_string(version)) {
      return error(kube::ErrorKind::kConflict, "409 Conflict");
    }
    exists = true;
    blocks = new_blocks;
    ++version;
    return std::to_string(version);
  }
  static kube::Error error(kube::ErrorKind kind, std::string message) {
    kube::Error e;
    e.kind = kind;
    e.message = std::move(message);
    return e;
  }
  // Someone else edits the stored blocks (another writer).
  void concurrent_edit() {
    exists = true;
    if (!blocks.empty()) blocks[0].value += " [edited elsewhere]";
    ++version;
  }

  bool exists = false;
  runner::MemoryBlocks blocks;
  long long version = 1;
  int conflicts_to_inject = 0;
  bool fail_saves = false;
  int loads = 0;
  int save_attempts = 0;
};

}  // namespace hb::fakes
