#include "api/run_metadata.h"

namespace hb::api {

namespace {

bool alphanumeric(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

std::string entry_problem(const std::string& key, const nlohmann::json& value) {
  if (std::string problem = run_metadata_key_problem(key); !problem.empty()) return problem;
  if (!value.is_string()) return "metadata." + key + " must be a string";
  if (value.get_ref<const std::string&>().size() > kRunMetadataValueBytesMax) {
    return "metadata." + key + " is longer than " + std::to_string(kRunMetadataValueBytesMax) +
           " bytes";
  }
  return "";
}

}  // namespace

std::string run_metadata_key_problem(const std::string& key) {
  const std::string shown = key.size() > kRunMetadataKeyCharsMax ? key.substr(0, 16) + "…" : key;
  if (key.empty() || key.size() > kRunMetadataKeyCharsMax) {
    return "metadata key \"" + shown + "\" must be 1 to " +
           std::to_string(kRunMetadataKeyCharsMax) + " characters";
  }
  bool shape = alphanumeric(key.front()) && alphanumeric(key.back());
  for (char c : key) shape = shape && (alphanumeric(c) || c == '-' || c == '_' || c == '.');
  if (!shape) {
    return "metadata key \"" + shown +
           "\" must be letters, digits, '-', '_' or '.', starting and ending with a letter or "
           "digit";
  }
  return "";
}

std::string run_metadata_problem(const nlohmann::json& metadata) {
  if (!metadata.is_object()) return "metadata must be an object of strings";
  if (metadata.size() > kRunMetadataEntriesMax) {
    return "metadata may have at most " + std::to_string(kRunMetadataEntriesMax) +
           " entries, got " + std::to_string(metadata.size());
  }
  for (auto it = metadata.begin(); it != metadata.end(); ++it) {
    if (std::string problem = entry_problem(it.key(), it.value()); !problem.empty()) return problem;
  }
  return "";
}

RunMetadata usable_run_metadata(const nlohmann::json* metadata) {
  RunMetadata out;
  if (metadata == nullptr || !metadata->is_object()) return out;
  for (auto it = metadata->begin(); it != metadata->end(); ++it) {
    if (out.size() == kRunMetadataEntriesMax) break;
    if (entry_problem(it.key(), it.value()).empty()) {
      out.emplace(it.key(), it.value().get<std::string>());
    }
  }
  return out;
}

}  // namespace hb::api
