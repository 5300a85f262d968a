// Agent types and their capabilities (Kelpie ADR-011): one static table that
// fixes, per type, the tools the model is offered, whether the type may pause
// its heartbeats, and how many model calls one heartbeat may make. The runner
// enforces it; the operator shows the same table in Agent status.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string_view>

namespace hb::api {

enum class AgentType { kMemgpt, kLettaV1, kReact };

inline constexpr AgentType kAgentTypeDefault = AgentType::kMemgpt;

// Tool names, as the model sees them.
inline constexpr std::string_view kToolShell = "shell";
inline constexpr std::string_view kToolCoreMemoryAppend = "core_memory_append";
inline constexpr std::string_view kToolCoreMemoryReplace = "core_memory_replace";
inline constexpr std::string_view kToolArchivalMemoryInsert = "archival_memory_insert";
inline constexpr std::string_view kToolArchivalMemorySearch = "archival_memory_search";
inline constexpr std::string_view kToolConversationSearch = "conversation_search";
inline constexpr std::string_view kToolPauseHeartbeats = "pause_heartbeats";

// Tools that need the archival storage (SQLite file on a per-agent volume).
bool tool_needs_archival_storage(std::string_view tool);

// Tools that change nothing: memory searches and pause_heartbeats. A run
// whose only tool calls are these acted on nothing (idle backoff counts it
// idle; the result's usage.actionToolCalls leaves them out).
bool tool_only_reads(std::string_view tool);

// The system prompt template a type opens with (ADR-011's
// system_prompt_template): its name, shown in Agent status, and its text,
// rendered by the runner with "{agent}" replaced by the agent's name.
struct SystemPromptTemplate {
  std::string_view name;  // "default" | "react"
  std::string_view text;
};
inline constexpr std::string_view kSystemPromptAgentPlaceholder = "{agent}";

struct AgentCapabilities {
  AgentType type;
  std::span<const std::string_view> allowed_tools;
  bool supports_heartbeats;                   // may call pause_heartbeats
  int max_iterations;                         // model calls per heartbeat
  const SystemPromptTemplate* system_prompt;  // never null

  bool allows(std::string_view tool) const;
};

// The table. Never fails: every AgentType has an entry.
const AgentCapabilities& capabilities(AgentType type);
// The most model calls a heartbeat of any type may make: the bound of a run
// whose Agent, and so its type, is gone.
int max_iterations_of_any_type();

// "memgpt_agent" | "letta_v1_agent" | "react_agent".
std::string_view to_string(AgentType type);
std::optional<AgentType> parse_agent_type(std::string_view name);
// The accepted names, for error messages: "memgpt_agent, letta_v1_agent, react_agent".
std::string_view agent_type_names();

// {"tools": [...], "heartbeats": bool, "maxIterations": n, "systemPrompt":
// name}, as shown in Agent status.capabilities (the CRD's field names).
nlohmann::json to_json(const AgentCapabilities& caps);

}  // namespace hb::api
