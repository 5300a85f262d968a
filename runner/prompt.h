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

std::string render_system_prompt(const api::ContextDocument& doc, const MemoryBlocks& blocks,
                                 const std::vector<ToolSpec>& tools, TimePoint now);

std::string render_heartbeat_message(const api::ContextDocument& doc);

}  // namespace hb::runner
