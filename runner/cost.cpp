#include "runner/cost.h"

#include "runner/limits.h"
#include "runner/wire_util.h"

namespace hb::runner {
namespace {

constexpr double kTokensPerMillion = 1e6;

}  // namespace

double cost_cents(const Usage& usage, const api::Pricing& pricing) {
  return (static_cast<double>(usage.input_tokens) * pricing.input_cents_per_million_tokens +
          static_cast<double>(usage.output_tokens) * pricing.output_cents_per_million_tokens) /
         kTokensPerMillion;
}

double cost_cents(const Usage& usage, long long cache_read_tokens, long long cache_write_tokens,
                  const api::Pricing& pricing) {
  const bool within = cache_read_tokens >= 0 && cache_write_tokens >= 0 &&
                      cache_read_tokens <= usage.input_tokens &&
                      cache_write_tokens <= usage.input_tokens - cache_read_tokens;
  if (!within) return cost_cents(usage, pricing);
  const double input = pricing.input_cents_per_million_tokens;
  const double cached = pricing.cached_input_cents_per_million_tokens.value_or(input);
  const double written = pricing.cache_write_input_cents_per_million_tokens.value_or(input);
  const long long uncached = usage.input_tokens - cache_read_tokens - cache_write_tokens;
  return cost_cents({uncached, usage.output_tokens}, pricing) +
         (static_cast<double>(cache_read_tokens) * cached +
          static_cast<double>(cache_write_tokens) * written) /
             kTokensPerMillion;
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
