// @mentions: a run's output that names `@<agent>` wakes that Agent of the
// same namespace with a callback run, when the Agent opts in
// (spec.heartbeat.wakeOnMention, or the mentioning agent in
// spec.heartbeat.mentionableBy). The output is the agent's own text, so
// every bound is the operator's: at most kMentionsPerRunMax agents a run, no
// self-mention, and a chain depth carried on each mention run so two agents
// can never wake each other forever. Pure.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "controllers/model/json_util.h"

namespace hb::controllers {

inline constexpr std::string_view kMentionableByField = "spec.heartbeat.mentionableBy";
// Distinct agents one run's output may wake; later mentions are ignored.
inline constexpr std::size_t kMentionsPerRunMax = 3;
// A run started by a mention carries its depth (1 for the first); a run at
// this depth wakes nobody.
inline constexpr int64_t kMentionDepthMax = 3;
inline constexpr std::size_t kMentionableByItemsMax = 64;  // the CRD's maxItems too
// On a mention run: its chain depth (kMentionDepthMax when unreadable).
inline constexpr const char* kAnnotationMentionDepth = "heartbeat.dev/mention-depth";

// Who may wake an Agent by mentioning it.
struct MentionPolicy {
  bool anyone = false;            // spec.heartbeat.wakeOnMention
  std::vector<std::string> from;  // spec.heartbeat.mentionableBy: agent names
  bool operator==(const MentionPolicy&) const = default;
};

MentionPolicy parse_mention_policy(const Json& heartbeat, std::vector<std::string>& errors);
bool accepts_mention(const MentionPolicy& policy, std::string_view from_agent);

// The agents `output` mentions, in order of first mention, without `self`,
// at most kMentionsPerRunMax: `@name` where name is an Agent name's form
// (lowercase alphanumerics, '-' and '.', at most 253) not preceded by a
// letter, digit, '.', '_' or '-' (so an e-mail address is no mention).
std::vector<std::string> mentioned_agents(std::string_view output, std::string_view self);

// A run's chain depth: 0 without the annotation; kMentionDepthMax when the
// annotation is not a number 1..kMentionDepthMax (a hand-made value stops
// the chain rather than restarting it).
int64_t mention_depth(const Json& run);

// The callback run a mention makes: one per (mentioning run, target), so a
// pass repeated after a crash finds it instead of making another.
std::string mention_run_name(std::string_view target, std::string_view mentioning_run_uid);

}  // namespace hb::controllers
