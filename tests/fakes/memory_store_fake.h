// An in-memory MemoryStore with resource versions; tests can change it behind
// the runner's back (to force a 409) or make it fail.
#pragma once

#include <stdexcept>

#include "runner/memory_store.h"

namespace hb::fakes {

class FakeMemoryStore final : public runner::MemoryStore {
 public:
  std::optional<runner::MemorySnapshot> load() override {
    ++loads;
    if (!exists) return std::nullopt;
    return runner::MemorySnapshot{blocks, std::to_string(version)};
  }
  std::string save(const runner::MemoryBlocks& new_blocks, const std::string& expected) override {
    ++save_attempts;
    if (fail_saves) throw std::runtime_error("configmaps is forbidden");
    if (conflicts_to_inject > 0) {
      --conflicts_to_inject;
      concurrent_edit();
      throw runner::MemoryConflict("409 Conflict");
    }
    if (expected.empty() ? exists : expected != std::to_string(version)) {
      throw runner::MemoryConflict("409 Conflict");
    }
    exists = true;
    blocks = new_blocks;
    ++version;
    return std::to_string(version);
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
