#include "api/context_document.h"

#include <algorithm>

namespace hb::api {

std::string_view to_string(Provider provider) {
  return provider == Provider::kOpenAI ? "openai" : "anthropic";
}

std::optional<Provider> parse_provider(std::string_view name) {
  if (name == "openai") return Provider::kOpenAI;
  if (name == "anthropic") return Provider::kAnthropic;
  return std::nullopt;
}

std::optional<double> Budget::run_limit_cents() const {
  std::optional<double> limit;
  for (const std::optional<double>& cents :
       {per_run_cents, month_remaining_cents, day_remaining_cents}) {
    if (cents) limit = limit ? std::min(*limit, *cents) : *cents;
  }
  return limit;
}

}  // namespace hb::api
