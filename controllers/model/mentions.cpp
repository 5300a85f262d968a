#include "controllers/model/mentions.h"

#include <algorithm>

#include "api/hb_assert.h"
#include "controllers/model/names.h"

namespace hb::controllers {

namespace {

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.';
}

bool is_word_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-' || c == '.';
}

bool is_alnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

bool is_agent_name(std::string_view name) {
  return !name.empty() && name.size() <= kObjectNameCharsMax && is_alnum(name.front()) &&
         is_alnum(name.back()) && std::all_of(name.begin(), name.end(), is_name_char);
}

// The name after an '@' at `at`: name characters, trimmed of the '-' and
// '.' a sentence may put after it ("@beta." "@beta-"); empty when none or
// when a character no name has follows (an uppercase letter, '_').
std::string_view name_after(std::string_view text, std::size_t at) {
  HB_ASSERT_MSG(at < text.size() && text[at] == '@', "the caller found an '@' at `at`");
  std::size_t end = at + 1;
  while (end < text.size() && is_name_char(text[end])) ++end;
  if (end < text.size() && is_word_char(text[end])) return {};  // @Beta, @beta_bot
  std::string_view name = text.substr(at + 1, end - at - 1);
  while (!name.empty() && !is_alnum(name.back())) name.remove_suffix(1);
  return is_agent_name(name) ? name : std::string_view();
}

}  // namespace

MentionPolicy parse_mention_policy(const Json& heartbeat, std::vector<std::string>& errors) {
  MentionPolicy policy;
  policy.anyone = bool_at(heartbeat, "wakeOnMention");
  const Json* from = find_path(heartbeat, "mentionableBy");
  if (from == nullptr || from->is_null()) return policy;
  if (!from->is_array() || from->size() > kMentionableByItemsMax) {
    errors.push_back(std::string(kMentionableByField) + ": must be a list of at most " +
                     std::to_string(kMentionableByItemsMax) + " Agent names");
    return policy;
  }
  for (const Json& item : *from) {
    // Both arms string_view: a std::string arm would make a temporary to view.
    const std::string_view name = item.is_string()
                                      ? std::string_view(item.get_ref<const std::string&>())
                                      : std::string_view();
    if (!is_agent_name(name)) {
      errors.push_back(std::string(kMentionableByField) + " \"" +
                       (item.is_string() ? std::string(name) : item.dump()) +
                       "\": not an Agent name (lowercase letters, digits, '-' and '.')");
      continue;
    }
    policy.from.emplace_back(name);
  }
  HB_ASSERT_MSG(policy.from.size() <= kMentionableByItemsMax,
                "mentionableBy names at most its cap of agents");
  return policy;
}

bool accepts_mention(const MentionPolicy& policy, std::string_view from_agent) {
  return policy.anyone ||
         std::find(policy.from.begin(), policy.from.end(), from_agent) != policy.from.end();
}

std::vector<std::string> mentioned_agents(std::string_view output, std::string_view self) {
  std::vector<std::string> out;
  for (std::size_t at = output.find('@');
       at != std::string_view::npos && out.size() < kMentionsPerRunMax;
       at = output.find('@', at + 1)) {
    if (at > 0 && is_word_char(output[at - 1])) continue;  // user@example.com
    const std::string_view name = name_after(output, at);
    if (name.empty() || name == self) continue;
    if (std::find(out.begin(), out.end(), name) == out.end()) out.emplace_back(name);
  }
  HB_ASSERT_MSG(out.size() <= kMentionsPerRunMax, "a run wakes a bounded number of agents");
  return out;
}

// The depth annotation is one digit, 1 to the bound.
static_assert(kMentionDepthMax >= 1 && kMentionDepthMax <= 9);

int64_t mention_depth(const Json& run) {
  const Json* annotations = find_path(run, "metadata/annotations");
  if (annotations == nullptr || !annotations->is_object()) return 0;
  auto it = annotations->find(kAnnotationMentionDepth);
  if (it == annotations->end()) return 0;
  const std::string text = it->is_string() ? it->get<std::string>() : "";
  if (text.size() == 1 && text[0] >= '1' && text[0] <= '0' + kMentionDepthMax) {
    const int64_t depth = text[0] - '0';
    HB_ASSERT_MSG(depth >= 1 && depth <= kMentionDepthMax, "a mention depth lies in 1..the bound");
    return depth;
  }
  return kMentionDepthMax;
}

std::string mention_run_name(std::string_view target, std::string_view mentioning_run_uid) {
  std::string name = derived_name(
      target, "mention-" + long_hash(std::string(mentioning_run_uid) + "/" + std::string(target)));
  HB_ASSERT_MSG(name.size() <= kObjectNameCharsMax, "a mention's run name is a valid object name");
  return name;
}

}  // namespace hb::controllers
