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
  if (per_run_cents && month_remaining_cents)
    return std::min(*per_run_cents, *month_remaining_cents);
  if (per_run_cents) return per_run_cents;
  return month_remaining_cents;
}

}  // namespace hb::api
