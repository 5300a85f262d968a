#include "controllers/model/names.h"

#include <cstdint>
#include <cstdio>

#include "api/fnv1a.h"
#include "api/hb_assert.h"
#include "controllers/schedule/run_name.h"

namespace hb::controllers {

std::string long_hash(std::string_view text) {
  char buffer[17];
  std::snprintf(buffer, sizeof buffer, "%016llx",
                static_cast<unsigned long long>(api::fnv1a64(text)));
  return std::string(buffer, 16);
}

namespace {

std::string trim_dashes(std::string text) {
  while (!text.empty() && (text.back() == '-' || text.back() == '.')) text.pop_back();
  return text;
}

}  // namespace

std::string derived_name(std::string_view base, std::string_view suffix, std::size_t max_chars) {
  HB_ASSERT(suffix.size() + kNameHashChars + 3 < max_chars);
  std::string full = std::string(base) + "-" + std::string(suffix);
  if (full.size() <= max_chars) return full;
  const std::size_t keep = max_chars - suffix.size() - kNameHashChars - 2;
  std::string shortened = trim_dashes(std::string(base.substr(0, keep))) + "-" + short_hash(base) +
                          "-" + std::string(suffix);
  HB_ASSERT_MSG(shortened.size() <= max_chars, "a derived name fits where it is used");
  return shortened;
}

std::string job_name_for_run(std::string_view run_name) {
  std::string name = label_safe_name(run_name);
  HB_ASSERT_MSG(name.size() <= kLabelValueCharsMax, "a Job's name is its Pods' job-name label");
  return name;
}

// A Pod's generated name (the prefix and the API server's random
// characters) is a label like the Job's own.
static_assert(kGeneratedNameBaseCharsMax + 5 == kLabelValueCharsMax);

std::string pod_name_prefix_for_job(std::string_view job_name) {
  std::string prefix = std::string(job_name) + "-";
  if (prefix.size() > kGeneratedNameBaseCharsMax) prefix.resize(kGeneratedNameBaseCharsMax);
  HB_ASSERT_MSG(!prefix.empty() && prefix.size() <= kGeneratedNameBaseCharsMax,
                "a Pod name prefix is what the API server keeps of a generateName");
  return prefix;
}
// Each fixed suffix below meets derived_name's precondition at compile time.
std::string context_config_map_name(std::string_view run_name) {
  constexpr std::string_view kSuffix = "context";
  static_assert(kSuffix.size() + kNameHashChars + 3 < kObjectNameCharsMax);
  return derived_name(run_name, kSuffix);
}
std::string lease_name_for_agent(std::string_view agent_name) {
  constexpr std::string_view kSuffix = "heartbeat";
  static_assert(kSuffix.size() + kNameHashChars + 3 < kObjectNameCharsMax);
  return derived_name(agent_name, kSuffix);
}
std::string memory_config_map_name(std::string_view agent_name) {
  constexpr std::string_view kSuffix = "memory";
  static_assert(kSuffix.size() + kNameHashChars + 3 < kObjectNameCharsMax);
  return derived_name(agent_name, kSuffix);
}
std::string service_account_name(std::string_view agent_name) {
  constexpr std::string_view kSuffix = "runner";
  static_assert(kSuffix.size() + kNameHashChars + 3 < kObjectNameCharsMax);
  return derived_name(agent_name, kSuffix);
}

}  // namespace hb::controllers
