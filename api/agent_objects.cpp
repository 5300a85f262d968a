#include "api/agent_objects.h"

#include <cstdint>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "api/contract_limits.h"
#include "api/fnv1a.h"
#include "api/object_names.h"

namespace hb::api {

std::string short_hash(std::string_view text) {
  char buffer[kNameHashChars + 1];
  std::snprintf(buffer, sizeof buffer, "%08x", fnv1a32(text));
  return std::string(buffer, kNameHashChars);
}

std::string label_safe_name(std::string_view name) {
  if (is_dns1123_label(name)) return std::string(name);
  std::string cleaned;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
    cleaned.push_back(ok ? c : '-');
  }
  cleaned.resize(std::min(cleaned.size(), kDns1123LabelCharsMax - kNameHashChars - 1));
  while (!cleaned.empty() && cleaned.back() == '-') cleaned.pop_back();
  while (!cleaned.empty() && cleaned.front() == '-') cleaned.erase(cleaned.begin());
  return (cleaned.empty() ? std::string("run") : cleaned) + "-" + short_hash(name);
}

std::map<std::string, std::string> agent_object_labels(std::string_view agent_name) {
  return {{kLabelAgent, label_safe_name(agent_name)}, {kLabelManagedBy, kManagedByValue}};
}

std::string encode_memory_blocks(const std::vector<MemoryBlock>& blocks) {
  nlohmann::json array = nlohmann::json::array();
  for (const auto& block : blocks) {
    array.push_back({{"label", block.label}, {"value", block.value}, {"limit", block.limit}});
  }
  return array.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

DecodedMemoryBlocks decode_memory_blocks(const std::string& text) {
  const std::string where = std::string("memory ConfigMap key ") + kMemoryBlocksKey;
  nlohmann::json array = nlohmann::json::parse(text, nullptr, false);
  if (array.is_discarded() || !array.is_array()) return {{}, where + " is not a JSON array"};
  DecodedMemoryBlocks out;
  for (const auto& item : array) {
    if (!item.is_object() || !item.contains("label") || !item["label"].is_string()) {
      return {{}, where + " has a block without a label"};
    }
    const auto value = item.find("value");
    const auto limit = item.find("limit");
    if ((value != item.end() && !value->is_string()) ||
        (limit != item.end() && !limit->is_number_integer())) {
      return {{}, where + " has a block whose value is not a string or limit not an integer"};
    }
    MemoryBlock block;
    block.label = item["label"].get<std::string>();
    block.value = value != item.end() ? value->get<std::string>() : std::string();
    block.limit = limit != item.end() ? limit->get<int>() : kCoreMemoryBlockLimitDefault;
    out.blocks.push_back(std::move(block));
  }
  return out;
}

}  // namespace hb::api
