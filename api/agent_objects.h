// The per-agent objects both binaries write: the agent's Lease and its
// memory ConfigMap carry the same labels whoever creates them (the operator
// beside the Agent, the runner when it finds one missing), so the operator's
// label-selected caches see them; the memory ConfigMap holds its blocks in
// one format. Pure.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "api/context_document.h"

namespace hb::api {

inline constexpr const char* kLabelAgent = "heartbeat.dev/agent";
inline constexpr const char* kLabelManagedBy = "app.kubernetes.io/managed-by";
inline constexpr const char* kManagedByValue = "heartbeat-operator";
// The memory ConfigMap's key: a JSON array of {label, value, limit}.
inline constexpr const char* kMemoryBlocksKey = "blocks.json";

inline constexpr std::size_t kNameHashChars = 8;

// Eight lowercase hex digits of a name (FNV-1a): what a shortened name keeps
// of the full one, so it stays unique.
std::string short_hash(std::string_view text);
// A valid label value for any object name: the name itself when it is a
// DNS-1123 label, else a cleaned prefix and short_hash of the name.
std::string label_safe_name(std::string_view name);
// The labels of an agent's Lease and memory ConfigMap.
std::map<std::string, std::string> agent_object_labels(std::string_view agent_name);

// The memory ConfigMap's blocks.json; a block without a limit has
// kCoreMemoryBlockLimitDefault.
std::string encode_memory_blocks(const std::vector<MemoryBlock>& blocks);
// The blocks, or (error not empty) why the text is not blocks.
struct DecodedMemoryBlocks {
  std::vector<MemoryBlock> blocks;
  std::string error;
  bool ok() const { return error.empty(); }
};
DecodedMemoryBlocks decode_memory_blocks(const std::string& text);

}  // namespace hb::api
