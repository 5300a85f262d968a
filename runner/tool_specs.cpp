#include "runner/tool_specs.h"

#include "api/hb_assert.h"
#include "runner/limits.h"

namespace hb::runner {
namespace {

using nlohmann::json;

json string_property(const char* description) {
  return {{"type", "string"}, {"description", description}};
}

json object_schema(json properties, json required) {
  return {
      {"type", "object"}, {"properties", std::move(properties)}, {"required", std::move(required)}};
}

}  // namespace

std::optional<ToolSpec> tool_spec(std::string_view name) {
  if (name == api::kToolShell) {
    return ToolSpec{
        std::string(name),
        "Run a command with /bin/sh -c in the agent's container. Returns the exit code and "
        "the combined stdout and stderr (long output keeps its beginning and end).",
        object_schema(
            {{"command", string_property("The shell command line to run.")},
             {"timeout_seconds",
              {{"type", "integer"},
               {"minimum", 1},
               {"maximum", kShellTimeoutMax.count()},
               {"description", "Kill the command after this many seconds (default " +
                                   std::to_string(kShellTimeoutDefault.count()) + ")."}}}},
            {"command"})};
  }
  if (name == api::kToolCoreMemoryAppend) {
    return ToolSpec{
        std::string(name),
        "Append text to a core memory block (on a new line). Core memory is always in your "
        "system prompt and persists to later heartbeats. Each block has a character limit.",
        object_schema({{"label", string_property("The block's label.")},
                       {"content", string_property("Text to append.")}},
                      {"label", "content"})};
  }
  if (name == api::kToolCoreMemoryReplace) {
    return ToolSpec{std::string(name),
                    "Replace text in a core memory block. old_content must match the block's text "
                    "exactly; an empty new_content deletes it.",
                    object_schema({{"label", string_property("The block's label.")},
                                   {"old_content", string_property("Exact text to replace.")},
                                   {"new_content", string_property("Replacement text.")}},
                                  {"label", "old_content", "new_content"})};
  }
  if (name == api::kToolArchivalMemoryInsert) {
    return ToolSpec{
        std::string(name),
        "Store a passage in archival memory, a long-term store outside your context that "
        "later heartbeats can search.",
        object_schema({{"content", string_property("The passage to store.")}}, {"content"})};
  }
  if (name == api::kToolArchivalMemorySearch) {
    return ToolSpec{std::string(name),
                    "Full-text search of archival memory; returns the best matching passages.",
                    object_schema({{"query", string_property("Words to search for.")}}, {"query"})};
  }
  if (name == api::kToolConversationSearch) {
    return ToolSpec{
        std::string(name),
        "Full-text search of earlier heartbeats' outputs; returns the best matches with "
        "their run names and times.",
        object_schema({{"query", string_property("Words to search for.")}}, {"query"})};
  }
  if (name == api::kToolPauseHeartbeats) {
    return ToolSpec{
        std::string(name),
        "Pause your heartbeats and end this heartbeat now. Use it when you have nothing more "
        "to do; the next heartbeat comes after the pause.",
        object_schema({{"minutes",
                        {{"type", "integer"},
                         {"minimum", api::kPauseMinutesMin},
                         {"maximum", api::kPauseMinutesMax},
                         {"default", api::kPauseMinutesDefault},
                         {"description", "Minutes to pause heartbeats (1-60, default 2)."}}}},
                      json::array())};
  }
  return std::nullopt;
}

OfferedTools offered_tools(const api::AgentCapabilities& caps, bool archival_storage_available) {
  OfferedTools out;
  std::string skipped;
  for (auto name : caps.allowed_tools) {
    if (api::tool_needs_archival_storage(name) && !archival_storage_available) {
      skipped += (skipped.empty() ? "" : ", ") + std::string(name);
      continue;
    }
    std::optional<ToolSpec> spec = tool_spec(name);
    HB_ASSERT_MSG(spec.has_value(), "every allowed tool has a spec");
    out.tools.push_back(*std::move(spec));
  }
  if (!skipped.empty()) {
    out.notes.push_back(skipped + " not offered: the agent has no archival storage configured");
  }
  return out;
}

}  // namespace hb::runner
