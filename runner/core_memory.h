// Core memory: labelled blocks, each with a character limit, always shown in
// the system prompt. Edits are pure: they return the new blocks or an error
// message meant for the model (how much room is left, what did not match).
#pragma once

#include <string>
#include <variant>
#include <vector>

#include "api/agent_objects.h"
#include "api/context_document.h"

namespace hb::runner {

using MemoryBlocks = std::vector<api::MemoryBlock>;

struct MemoryEditError {
  std::string message;  // shown to the model as the tool error
};

// One edit as the model asked for it; replayable on fresher blocks after a
// 409 Conflict when saving.
struct MemoryEdit {
  enum class Kind { kAppend, kReplace };
  Kind kind = Kind::kAppend;
  std::string label;
  std::string content;      // append: text to add; replace: new text
  std::string old_content;  // replace only: exact text to find
};

using MemoryEditResult = std::variant<MemoryBlocks, MemoryEditError>;

// Appends on a new line (no separator when the block is empty).
MemoryEditResult apply_memory_edit(const MemoryBlocks& blocks, const MemoryEdit& edit);

// Characters used by a block's value (Unicode code points).
int block_chars(const api::MemoryBlock& block);

// The blocks the heartbeat starts from: stored blocks (the agent's edits from
// earlier heartbeats) win for values; the spec's blocks add missing labels and
// set every label's limit; labels only in the store keep their stored limit.
MemoryBlocks merge_memory_blocks(const MemoryBlocks& spec, const MemoryBlocks& stored);

// <memory_blocks> section for the system prompt: label, value and chars used/limit.
std::string render_memory_blocks(const MemoryBlocks& blocks);

// ConfigMap data format (one definition for both binaries).
using api::decode_memory_blocks;
using api::encode_memory_blocks;

}  // namespace hb::runner
