// The tools' names, descriptions and argument schemas, and which of them one
// heartbeat offers (the agent type's allowed tools, less those whose storage
// is missing).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "api/agent_types.h"
#include "runner/conversation.h"

namespace hb::runner {

// The spec of one known tool; none for an unknown name.
std::optional<ToolSpec> tool_spec(std::string_view name);

struct OfferedTools {
  std::vector<ToolSpec> tools;
  std::vector<std::string> notes;  // why an allowed tool is not offered
};

OfferedTools offered_tools(const api::AgentCapabilities& caps, bool archival_storage_available);

}  // namespace hb::runner
