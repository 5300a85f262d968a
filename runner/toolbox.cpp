#include "runner/toolbox.h"

#include <algorithm>
#include <cmath>

#include "api/agent_types.h"
#include "api/utf8.h"
#include "runner/limits.h"

namespace hb::runner {
namespace {

using nlohmann::json;

// The string argument `key`, or an error message in `error`.
std::optional<std::string> string_argument(const json& arguments, const char* key,
                                           std::string& error, bool allow_empty = false) {
  auto it = arguments.find(key);
  if (it == arguments.end() || !it->is_string()) {
    error = std::string("argument \"") + key + "\" is required and must be a string";
    return std::nullopt;
  }
  std::string value = it->get<std::string>();
  if (value.empty() && !allow_empty) {
    error = std::string("argument \"") + key + "\" must not be empty";
    return std::nullopt;
  }
  return value;
}

std::string format_hits(const std::vector<SearchHit>& hits, bool with_run) {
  if (hits.empty()) return "no matches";
  std::string out;
  int index = 0;
  for (const auto& hit : hits) {
    out += "[" + std::to_string(++index) + "]";
    if (with_run && !hit.run.empty()) out += " " + hit.run;
    if (!hit.created.empty()) out += " " + hit.created;
    out += "\n" + api::truncate_utf8(hit.content, kSearchResultBytesMax) + "\n";
  }
  return out;
}

}  // namespace

ToolOutcome Toolbox::run(const std::string& name, const json& arguments, TimePoint deadline) {
  std::string error;
  if (name == api::kToolShell) return shell(arguments, deadline);
  if (name == api::kToolCoreMemoryAppend) {
    auto label = string_argument(arguments, "label", error);
    auto content = label ? string_argument(arguments, "content", error) : std::nullopt;
    if (!content) return {error, true};
    return deps_.memory.edit({MemoryEdit::Kind::kAppend, *label, *content, ""});
  }
  if (name == api::kToolCoreMemoryReplace) {
    auto label = string_argument(arguments, "label", error);
    auto old_content = label ? string_argument(arguments, "old_content", error) : std::nullopt;
    auto new_content =
        old_content ? string_argument(arguments, "new_content", error, true) : std::nullopt;
    if (!new_content) return {error, true};
    return deps_.memory.edit({MemoryEdit::Kind::kReplace, *label, *new_content, *old_content});
  }
  if (name == api::kToolArchivalMemoryInsert) {
    if (!deps_.archival) return {"archival storage is not configured for this agent", true};
    auto content = string_argument(arguments, "content", error);
    if (!content) return {error, true};
    if (ArchivalDone failed =
            deps_.archival->insert_passage(*content, deps_.run_name, deps_.clock.now())) {
      return {"archival insert failed: " + failed->message, true};
    }
    return {"stored in archival memory", false};
  }
  if (name == api::kToolArchivalMemorySearch || name == api::kToolConversationSearch) {
    return search(name, arguments);
  }
  return {"tool \"" + name + "\" has no implementation in this runner", true};
}

ToolOutcome Toolbox::search(const std::string& name, const json& arguments) {
  if (!deps_.archival) return {"archival storage is not configured for this agent", true};
  std::string error;
  auto query = string_argument(arguments, "query", error);
  if (!query) return {error, true};
  if (fts5_query(*query).empty()) return {"the query has no words to search for", true};
  const bool archival = name == api::kToolArchivalMemorySearch;
  auto hits = archival ? deps_.archival->search_passages(*query, kSearchResultsMax)
                       : deps_.archival->search_conversation(*query, kSearchResultsMax);
  if (!hits.ok()) return {"search failed: " + hits.error().message, true};
  return {format_hits(hits.value(), !archival), false};
}

ToolOutcome Toolbox::shell(const json& arguments, TimePoint deadline) {
  std::string error;
  auto command = string_argument(arguments, "command", error);
  if (!command) return {error, true};
  std::chrono::seconds timeout = kShellTimeoutDefault;
  if (auto it = arguments.find("timeout_seconds"); it != arguments.end() && !it->is_null()) {
    if (!it->is_number() || !std::isfinite(it->get<double>())) {
      return {"argument \"timeout_seconds\" must be an integer", true};
    }
    // Clamped as a double first: a cast of 1e300 to an integer is undefined.
    const double seconds =
        std::clamp(it->get<double>(), 1.0, static_cast<double>(kShellTimeoutMax.count()));
    timeout = std::chrono::seconds(static_cast<long long>(seconds));
  }
  auto remaining =
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - deps_.clock.now());
  if (remaining.count() <= 0) return {"no time left in this heartbeat to run a command", true};
  ShellOptions options;
  options.timeout = std::min<std::chrono::milliseconds>(timeout, remaining);
  options.head_bytes = kShellOutputHeadBytes;
  options.tail_bytes = kShellOutputTailBytes;
  options.beat_interval = kShellBeatInterval;
  options.beat = [this] { deps_.heartbeat.beat(); };
  options.cancelled = deps_.cancelled;
  options.env_remove = deps_.shell_env_remove;
  NoShell nowhere;
  ShellExecutor& executor = deps_.shell != nullptr ? *deps_.shell : nowhere;
  ShellResult result = executor.run(*command, options);
  bool failed = !result.spawn_error.empty() || result.timed_out;
  ToolOutcome outcome{format_shell_result(result), failed};
  outcome.tools_unavailable = executor.unavailable();
  return outcome;
}

}  // namespace hb::runner
