#include "runner/prompt.h"

#include <algorithm>

#include "api/rfc3339.h"
#include "api/utf8.h"
#include "runner/limits.h"

namespace hb::runner {

std::string render_prompt_template(const api::SystemPromptTemplate& prompt,
                                   const std::string& agent_name) {
  std::string out(prompt.text);
  const std::string_view slot = api::kSystemPromptAgentPlaceholder;
  for (std::size_t at = out.find(slot); at != std::string::npos;
       at = out.find(slot, at + agent_name.size())) {
    out.replace(at, slot.size(), agent_name);
  }
  return out;
}

std::string render_system_prompt(const api::ContextDocument& doc, const MemoryBlocks& blocks,
                                 const std::vector<ToolSpec>& tools, TimePoint now) {
  std::string out;
  out.reserve(doc.persona.size() + 2048);
  if (!doc.persona.empty()) out += doc.persona + "\n\n";
  out += render_prompt_template(*api::capabilities(doc.agent_type).system_prompt, doc.agent_name);
  out += "\n";
  if (!tools.empty()) {
    out += "Tools this heartbeat:";
    for (const auto& tool : tools) out += " " + tool.name;
    out += ". When you are done, answer without calling a tool";
    for (const auto& tool : tools) {
      if (tool.name == "pause_heartbeats") out += ", or call pause_heartbeats to rest longer";
    }
    out += ".\n";
  }
  out += "\n### Core memory\n";
  if (blocks.empty()) {
    out += "(no memory blocks)\n";
  } else {
    out +=
        "Always visible to you; edit it with core_memory_append and core_memory_replace when "
        "you have them. Each block shows its characters used and limit.\n";
    out += render_memory_blocks(blocks) + "\n";
  }
  out += "\n### This heartbeat\n";
  out += "- time: " + api::format_rfc3339_millis(now) + "\n";
  out += "- run: " + doc.run.name + " (" + doc.run.invocation_source;
  if (!doc.run.trigger_detail.empty()) out += ": " + doc.run.trigger_detail;
  out += ")\n";
  if (!doc.run.metadata.empty()) {
    out += "- metadata:";
    for (const auto& [key, value] : doc.run.metadata) {
      std::string shown = value;  // one line per fact in this list
      std::replace(shown.begin(), shown.end(), '\n', ' ');
      out += " " + key + "=" + shown + ";";
    }
    out.back() = '\n';
  }
  if (auto limit = doc.budget.run_limit_cents()) {
    char buffer[64];
    std::snprintf(buffer, sizeof buffer, "%.2f", *limit);
    out += std::string("- budget for this heartbeat: ") + buffer + " cents\n";
  }
  return out;
}

std::string render_heartbeat_message(const api::ContextDocument& doc) {
  std::string out;
  if (!doc.recent_runs.empty()) {
    // The operator writes them oldest first (api::ContextDocument::recent_runs).
    out += "Outputs of your earlier heartbeats (oldest first):\n";
    for (const auto& run : doc.recent_runs) {
      out += "--- " + (run.name.empty() ? std::string("run") : run.name);
      if (!run.finished_at.empty()) out += " at " + run.finished_at;
      if (!run.stop_reason.empty()) out += " (" + run.stop_reason + ")";
      out += "\n" + api::truncate_utf8(run.output, api::kRecentRunOutputBytesMax) + "\n";
    }
    out += "---\n\n";
  }
  out += doc.heartbeat_prompt;
  return out;
}

}  // namespace hb::runner
