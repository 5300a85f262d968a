#include "runner/core_memory.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "api/utf8.h"

namespace hb::runner {
namespace {

std::string labels_of(const MemoryBlocks& blocks) {
  std::string out;
  for (const auto& block : blocks) {
    if (!out.empty()) out += ", ";
    out += block.label;
  }
  return out.empty() ? "(none)" : out;
}

MemoryEditError too_long(const api::MemoryBlock& block, const std::string& new_value, int room) {
  return {"block \"" + block.label + "\" would have " +
          std::to_string(api::utf8_length(new_value)) + " characters, over its limit of " +
          std::to_string(block.limit) + "; " + std::to_string(room) +
          " characters of room are left. Shorten the text or replace " + "older content first."};
}

}  // namespace

int block_chars(const api::MemoryBlock& block) {
  return static_cast<int>(api::utf8_length(block.value));
}

MemoryEditResult apply_memory_edit(const MemoryBlocks& blocks, const MemoryEdit& edit) {
  auto it = std::find_if(blocks.begin(), blocks.end(),
                         [&](const api::MemoryBlock& b) { return b.label == edit.label; });
  if (it == blocks.end()) {
    return MemoryEditError{"no memory block labelled \"" + edit.label +
                           "\"; blocks are: " + labels_of(blocks)};
  }
  const api::MemoryBlock& block = *it;
  int room = std::max(0, block.limit - block_chars(block));
  std::string new_value;
  if (edit.kind == MemoryEdit::Kind::kAppend) {
    if (edit.content.empty()) return MemoryEditError{"content is empty; nothing to append"};
    new_value = block.value.empty() ? edit.content : block.value + "\n" + edit.content;
  } else {
    if (edit.old_content.empty()) {
      return MemoryEditError{"old_content is empty; give the exact text to replace"};
    }
    auto pos = block.value.find(edit.old_content);
    if (pos == std::string::npos) {
      return MemoryEditError{"old_content was not found in block \"" + edit.label +
                             "\"; it must match the block's text exactly (case, spaces and "
                             "line breaks included)"};
    }
    new_value = block.value;
    new_value.replace(pos, edit.old_content.size(), edit.content);
  }
  if (static_cast<int>(api::utf8_length(new_value)) > block.limit)
    return too_long(block, new_value, room);
  MemoryBlocks out = blocks;
  out[static_cast<std::size_t>(it - blocks.begin())].value = std::move(new_value);
  return out;
}

MemoryBlocks merge_memory_blocks(const MemoryBlocks& spec, const MemoryBlocks& stored) {
  MemoryBlocks out;
  for (const auto& spec_block : spec) {
    auto it = std::find_if(stored.begin(), stored.end(),
                           [&](const api::MemoryBlock& b) { return b.label == spec_block.label; });
    api::MemoryBlock block = spec_block;
    if (it != stored.end()) block.value = it->value;
    out.push_back(std::move(block));
  }
  for (const auto& stored_block : stored) {
    auto it = std::find_if(spec.begin(), spec.end(), [&](const api::MemoryBlock& b) {
      return b.label == stored_block.label;
    });
    if (it == spec.end()) out.push_back(stored_block);
  }
  return out;
}

std::string render_memory_blocks(const MemoryBlocks& blocks) {
  std::string out = "<memory_blocks>\n";
  for (const auto& block : blocks) {
    out += "<" + block.label + ">\n";
    out += "<metadata>chars_current=" + std::to_string(block_chars(block)) +
           " chars_limit=" + std::to_string(block.limit) + "</metadata>\n";
    out += "<value>\n" + block.value + "\n</value>\n";
    out += "</" + block.label + ">\n";
  }
  out += "</memory_blocks>";
  return out;
}

}  // namespace hb::runner
