#include "controllers/schedule/run_name.h"

#include <cstdint>
#include <cstdio>

#include "api/fnv1a.h"
#include "api/hb_assert.h"
#include "api/object_names.h"

namespace hb::schedule {
namespace {

// The longest suffix ("-" and an int64's digits with its sign), the hash
// and the dash before it fit a name with a character of prefix to spare.
static_assert(1 + 20 + kRunNameHashChars + 1 < kRunNameCharsMax);

bool is_label_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
}
bool is_alnum(char c) {
  return is_label_char(c) && c != '-';
}

}  // namespace

std::string scheduled_run_name(std::string_view agent_name, TimePoint slot) {
  const std::string suffix = "-" + std::to_string(unix_seconds(slot));
  bool clean = !agent_name.empty() && agent_name.size() + suffix.size() <= kRunNameCharsMax;
  for (char c : agent_name) clean = clean && is_label_char(c);
  if (clean) return std::string(agent_name) + suffix;

  char hash[kRunNameHashChars + 1];
  std::snprintf(hash, sizeof hash, "%08x", static_cast<unsigned>(api::fnv1a32(agent_name)));
  const std::size_t prefix_max = kRunNameCharsMax - suffix.size() - kRunNameHashChars - 1;
  std::string prefix;
  for (char c : agent_name) {
    if (prefix.size() == prefix_max) break;
    prefix += is_label_char(c) ? c : '-';
  }
  // A label must start and end alphanumeric; the hash follows the prefix.
  while (!prefix.empty() && !is_alnum(prefix.front())) prefix.erase(prefix.begin());
  while (!prefix.empty() && !is_alnum(prefix.back())) prefix.pop_back();
  std::string name = prefix.empty() ? hash + suffix : prefix + "-" + hash + suffix;
  HB_ASSERT_MSG(name.size() <= kRunNameCharsMax, "a run name fits a DNS-1123 label");
  return name;
}

bool is_dns1123_label(std::string_view name) {
  static_assert(kRunNameCharsMax == api::kDns1123LabelCharsMax);
  return api::is_dns1123_label(name);
}

}  // namespace hb::schedule
