#include "api/agent_types.h"

#include <algorithm>
#include <array>

namespace hb::api {
namespace {

constexpr std::array<std::string_view, 7> kMemgptTools = {
    kToolShell,
    kToolCoreMemoryAppend,
    kToolCoreMemoryReplace,
    kToolArchivalMemoryInsert,
    kToolArchivalMemorySearch,
    kToolConversationSearch,
    kToolPauseHeartbeats,
};
constexpr std::array<std::string_view, 3> kLettaV1Tools = {
    kToolShell,
    kToolCoreMemoryAppend,
    kToolCoreMemoryReplace,
};
constexpr std::array<std::string_view, 1> kReactTools = {kToolShell};

// Kelpie ADR-011: memgpt and letta_v1 loop at most 5 times, ReAct 10.
constexpr int kMemgptIterationsMax = 5;
constexpr int kLettaV1IterationsMax = 5;
constexpr int kReactIterationsMax = 10;

constexpr SystemPromptTemplate kDefaultPrompt{
    "default",
    "You are agent \"{agent}\", running in discrete heartbeats: you wake, act with your "
    "tools, and go idle until the next heartbeat. Nothing you do not store is remembered."};
constexpr SystemPromptTemplate kReactPrompt{
    "react",
    "You are agent \"{agent}\", running in discrete heartbeats. Work in ReAct steps: reason "
    "about what to do next, act by calling one tool, observe its result, and repeat until the "
    "task is done; then give your answer without calling a tool. Nothing you do not store is "
    "remembered."};

const std::array<AgentCapabilities, 3> kTable = {{
    {AgentType::kMemgpt, kMemgptTools, true, kMemgptIterationsMax, &kDefaultPrompt},
    {AgentType::kLettaV1, kLettaV1Tools, false, kLettaV1IterationsMax, &kDefaultPrompt},
    {AgentType::kReact, kReactTools, false, kReactIterationsMax, &kReactPrompt},
}};

}  // namespace

bool tool_needs_archival_storage(std::string_view tool) {
  return tool == kToolArchivalMemoryInsert || tool == kToolArchivalMemorySearch ||
         tool == kToolConversationSearch;
}

bool tool_only_reads(std::string_view tool) {
  return tool == kToolArchivalMemorySearch || tool == kToolConversationSearch ||
         tool == kToolPauseHeartbeats;
}

bool AgentCapabilities::allows(std::string_view tool) const {
  return std::find(allowed_tools.begin(), allowed_tools.end(), tool) != allowed_tools.end();
}

const AgentCapabilities& capabilities(AgentType type) {
  return kTable[static_cast<std::size_t>(type)];
}

int max_iterations_of_any_type() {
  int most = 0;
  for (const auto& caps : kTable) most = std::max(most, caps.max_iterations);
  return most;
}

std::string_view to_string(AgentType type) {
  switch (type) {
    case AgentType::kMemgpt:
      return "memgpt_agent";
    case AgentType::kLettaV1:
      return "letta_v1_agent";
    case AgentType::kReact:
      return "react_agent";
  }
  return "memgpt_agent";
}

std::optional<AgentType> parse_agent_type(std::string_view name) {
  for (const auto& caps : kTable) {
    if (to_string(caps.type) == name) return caps.type;
  }
  return std::nullopt;
}

std::string_view agent_type_names() {
  return "memgpt_agent, letta_v1_agent, react_agent";
}

nlohmann::json to_json(const AgentCapabilities& caps) {
  nlohmann::json tools = nlohmann::json::array();
  for (auto tool : caps.allowed_tools) tools.push_back(std::string(tool));
  // Field names as in the Agent CRD's status.capabilities.
  return {{"tools", std::move(tools)},
          {"heartbeats", caps.supports_heartbeats},
          {"maxIterations", caps.max_iterations},
          {"systemPrompt", std::string(caps.system_prompt->name)}};
}

}  // namespace hb::api
