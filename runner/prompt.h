// The context the model sees: the system prompt (persona, core memory, how a
// heartbeat works) and the first user message (earlier runs' outputs, then the
// heartbeat prompt).
#pragma once

#include <string>
#include <vector>

#include "api/context_document.h"
#include "runner/conversation.h"
#include "runner/core_memory.h"

namespace hb::runner {

// The agent type's system prompt template with its agent's name filled in.
std::string render_prompt_template(const api::SystemPromptTemplate& prompt,
                                   const std::string& agent_name);

// The type's template (api/agent_types.h), then tools, core memory and
// this heartbeat's facts.
std::string render_system_prompt(const api::ContextDocument& doc, const MemoryBlocks& blocks,
                                 const std::vector<ToolSpec>& tools, TimePoint now);

std::string render_heartbeat_message(const api::ContextDocument& doc);

}  // namespace hb::runner
