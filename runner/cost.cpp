#include "runner/cost.h"

#include "runner/limits.h"
#include "runner/wire_util.h"

namespace hb::runner {

double cost_cents(const Usage& usage, const api::Pricing& pricing) {
  return (static_cast<double>(usage.input_tokens) * pricing.input_cents_per_million_tokens +
          static_cast<double>(usage.output_tokens) * pricing.output_cents_per_million_tokens) /
         1e6;
}

long long estimate_input_tokens(const ModelRequest& request) {
  std::size_t bytes = request.system.size();
  for (const auto& message : request.messages) {
    bytes += message.text.size() + 16;
    for (const auto& call : message.tool_calls)
      bytes += call.id.size() + call.name.size() + call.arguments.size() + 16;
    for (const auto& result : message.tool_results)
      bytes += result.call_id.size() + result.content.size() + 16;
  }
  for (const auto& tool : request.tools) {
    bytes += tool.name.size() + tool.description.size() + dump_json(tool.parameters).size();
  }
  return static_cast<long long>((bytes + kPromptBytesPerTokenMin - 1) / kPromptBytesPerTokenMin);
}

double worst_case_call_cents(const ModelRequest& request, const api::Pricing& pricing) {
  return cost_cents({estimate_input_tokens(request), request.max_tokens}, pricing);
}

long long worst_case_call_tokens(const ModelRequest& request) {
  return estimate_input_tokens(request) + request.max_tokens;
}

}  // namespace hb::runner
