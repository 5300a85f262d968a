#include "controllers/names.h"

#include <cassert>
#include <cstdint>
#include <cstdio>

#include "controllers/schedule/run_name.h"

namespace hb::controllers {

std::string short_hash(std::string_view text) {
  uint32_t hash = 2166136261u;
  for (unsigned char c : text) {
    hash ^= c;
    hash *= 16777619u;
  }
  char buffer[kNameHashChars + 1];
  std::snprintf(buffer, sizeof buffer, "%08x", hash);
  return std::string(buffer, kNameHashChars);
}

std::string long_hash(std::string_view text) {
  uint64_t hash = 14695981039346656037ull;
  for (unsigned char c : text) {
    hash ^= c;
    hash *= 1099511628211ull;
  }
  char buffer[17];
  std::snprintf(buffer, sizeof buffer, "%016llx", static_cast<unsigned long long>(hash));
  return std::string(buffer, 16);
}

namespace {

std::string trim_dashes(std::string text) {
  while (!text.empty() && (text.back() == '-' || text.back() == '.')) text.pop_back();
  return text;
}

}  // namespace

std::string derived_name(std::string_view base, std::string_view suffix, std::size_t max_chars) {
  assert(suffix.size() + kNameHashChars + 3 < max_chars);
  std::string full = std::string(base) + "-" + std::string(suffix);
  if (full.size() <= max_chars) return full;
  const std::size_t keep = max_chars - suffix.size() - kNameHashChars - 2;
  return trim_dashes(std::string(base.substr(0, keep))) + "-" + short_hash(base) + "-" +
         std::string(suffix);
}

std::string label_safe_name(std::string_view name) {
  if (schedule::is_dns1123_label(name)) return std::string(name);
  std::string cleaned;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
    cleaned.push_back(ok ? c : '-');
  }
  const std::size_t keep = kLabelValueCharsMax - kNameHashChars - 1;
  cleaned = trim_dashes(cleaned.substr(0, keep));
  while (!cleaned.empty() && cleaned.front() == '-') cleaned.erase(cleaned.begin());
  return (cleaned.empty() ? std::string("run") : cleaned) + "-" + short_hash(name);
}

std::string job_name_for_run(std::string_view run_name) {
  return label_safe_name(run_name);
}
std::string pod_name_prefix_for_job(std::string_view job_name) {
  std::string prefix = std::string(job_name) + "-";
  if (prefix.size() > kGeneratedNameBaseCharsMax) prefix.resize(kGeneratedNameBaseCharsMax);
  return prefix;
}
std::string context_config_map_name(std::string_view run_name) {
  return derived_name(run_name, "context");
}
std::string lease_name_for_agent(std::string_view agent_name) {
  return derived_name(agent_name, "heartbeat");
}
std::string memory_config_map_name(std::string_view agent_name) {
  return derived_name(agent_name, "memory");
}
std::string service_account_name(std::string_view agent_name) {
  return derived_name(agent_name, "runner");
}

}  // namespace hb::controllers
