#include "controllers/model/policy_spec.h"

#include <cmath>
#include <set>
#include <utility>

#include "api/context_document.h"
#include "api/contract_limits.h"
#include "api/hb_assert.h"
#include "api/object_names.h"
#include "controllers/model/agent_spec.h"
#include "controllers/schedule/time_zone.h"

namespace hb::controllers {

namespace {

// A price field: absent is unset; anything but a finite number in [0, max]
// is an error naming the field.
std::optional<double> parse_optional_price(const Json& entry, const char* key,
                                           const std::string& field,
                                           std::vector<std::string>& errors) {
  const Json* value = find_path(entry, key);
  if (value == nullptr || value->is_null()) return std::nullopt;
  const bool number = value->is_number() && std::isfinite(value->get<double>());
  if (!number || value->get<double>() < 0 ||
      value->get<double>() > kPriceCentsPerMillionTokensMax) {
    errors.push_back(field + "." + key + ": must be a number from 0 to " +
                     std::to_string(static_cast<int64_t>(kPriceCentsPerMillionTokensMax)));
    return std::nullopt;
  }
  const double price = value->get<double>();
  HB_ASSERT_MSG(price >= 0 && price <= kPriceCentsPerMillionTokensMax,
                "a price parsed lies in 0..its documented maximum");
  return price;
}

double parse_price(const Json& entry, const char* key, const std::string& field,
                   std::vector<std::string>& errors) {
  return parse_optional_price(entry, key, field, errors).value_or(0);
}

// One spec.pricing entry; nullopt (with errors) when it cannot price.
std::optional<PolicyPrice> parse_price_entry(const Json& entry, const std::string& field,
                                             std::vector<std::string>& errors) {
  if (!entry.is_object()) {
    errors.push_back(field + ": must be an object");
    return std::nullopt;
  }
  const size_t errors_before = errors.size();
  PolicyPrice price;
  price.provider = string_at(entry, "provider");
  price.model = string_at(entry, "model");
  if (!api::parse_provider(price.provider)) {
    errors.push_back(field + ".provider \"" + api::quote_untrusted(price.provider) +
                     "\": use openai or anthropic");
  }
  if (price.model.empty()) errors.push_back(field + ".model: is required (a model name or \"*\")");
  price.input_cents_per_million_tokens =
      parse_price(entry, "inputCentsPerMillionTokens", field, errors);
  price.output_cents_per_million_tokens =
      parse_price(entry, "outputCentsPerMillionTokens", field, errors);
  price.cached_input_cents_per_million_tokens =
      parse_optional_price(entry, "cachedInputCentsPerMillionTokens", field, errors);
  price.cache_write_input_cents_per_million_tokens =
      parse_optional_price(entry, "cacheWriteInputCentsPerMillionTokens", field, errors);
  if (errors.size() != errors_before) return std::nullopt;
  return price;
}

// A limit field: absent is 0 (no limit); anything but an integer in
// [0, max] is an error naming the field.
int64_t parse_limit(const Json& policy, std::string_view path, const std::string& field,
                    int64_t max, std::vector<std::string>& errors) {
  const Json* value = find_path(policy, path);
  if (value == nullptr || value->is_null()) return 0;
  if (!value->is_number_integer() || value->get<int64_t>() < 0 || value->get<int64_t>() > max) {
    errors.push_back(field + ": must be an integer from 0 to " + std::to_string(max) +
                     " (0: no limit)");
    return 0;
  }
  const int64_t limit = value->get<int64_t>();
  HB_ASSERT_MSG(limit >= 0 && limit <= max, "a limit parsed lies in 0..its documented maximum");
  return limit;
}

// A switch: absent is false; anything but a boolean is an error naming the field.
bool parse_flag(const Json& policy, std::string_view path, const std::string& field,
                std::vector<std::string>& errors) {
  const Json* value = find_path(policy, path);
  if (value == nullptr || value->is_null()) return false;
  if (!value->is_boolean()) {
    errors.push_back(field + ": must be true or false");
    return false;
  }
  return value->get<bool>();
}

// spec.onExceeded: Cancel (the default: runs in flight end when the team
// budget is spent) or Finish; true for Finish.
bool parse_on_exceeded(const Json& policy, std::vector<std::string>& errors) {
  const Json* value = find_path(policy, "spec/onExceeded");
  if (value == nullptr || value->is_null()) return false;
  if (value->is_string() && (*value == "Cancel" || *value == "Finish")) return *value == "Finish";
  errors.push_back("spec.onExceeded: use Cancel or Finish");
  return false;
}

// spec.pricing (parse_policy reads the two refusal switches); errors name
// the field.
void parse_policy_pricing(const Json& policy, PolicySpec& out) {
  const Json* list = find_path(policy, "spec/pricing");
  if (list == nullptr || list->is_null()) return;
  if (!list->is_array() || list->size() > kPolicyPricesMax) {
    out.errors.push_back("spec.pricing: must be a list of at most " +
                         std::to_string(kPolicyPricesMax) + " prices");
    return;
  }
  std::set<std::pair<std::string, std::string>> seen;
  for (size_t i = 0; i < list->size(); ++i) {
    const std::string field = "spec.pricing[" + std::to_string(i) + "]";
    std::optional<PolicyPrice> price = parse_price_entry((*list)[i], field, out.errors);
    if (!price) continue;
    if (!seen.emplace(price->provider, price->model).second) {
      out.errors.push_back(field + ": a second price for provider " + price->provider +
                           " and model \"" + api::quote_untrusted(price->model) + "\"");
      continue;
    }
    out.pricing.push_back(std::move(*price));
  }
  HB_ASSERT_MSG(out.pricing.size() <= kPolicyPricesMax && out.pricing.size() == seen.size(),
                "a policy holds at most its cap of prices, one per provider and model");
}

void parse_policy_time_zone(const Json& policy, PolicySpec& p) {
  const Json* zone = find_path(policy, "spec/timeZone");
  if (zone == nullptr) return;
  if (!zone->is_string()) {
    p.errors.push_back("spec.timeZone: must be an IANA time zone name such as Europe/Berlin");
    return;
  }
  auto found = schedule::find_time_zone(zone->get_ref<const std::string&>(), "spec.timeZone");
  if (found.ok()) {
    p.time_zone = *found.value;
  } else {
    p.errors.push_back(found.error);
  }
}

}  // namespace

bool PolicySpec::selects(const std::map<std::string, std::string>& agent_labels) const {
  return valid() && selector_matches(selector, agent_labels);
}

PolicySpec parse_policy(const Json& policy) {
  PolicySpec p;
  p.ns = string_at(policy, "metadata/namespace");
  p.name = string_at(policy, "metadata/name");
  p.generation = int_at(policy, "metadata/generation").value_or(0);
  SelectorParse selector =
      parse_label_selector(find_path(policy, "spec/selector"), "spec.selector");
  p.selector = std::move(selector.selector);
  p.errors = std::move(selector.errors);
  p.monthly_budget_cents = parse_limit(policy, "spec/budget/monthlyCents",
                                       "spec.budget.monthlyCents", INT64_MAX, p.errors);
  p.daily_budget_cents =
      parse_limit(policy, "spec/budget/dailyCents", "spec.budget.dailyCents", INT64_MAX, p.errors);
  parse_policy_time_zone(policy, p);
  p.per_run_tokens = parse_limit(policy, "spec/budget/perRunTokens", "spec.budget.perRunTokens",
                                 api::kPerRunTokensMax, p.errors);
  p.max_concurrent_runs = parse_limit(policy, "spec/maxConcurrentRuns", "spec.maxConcurrentRuns",
                                      kPolicyMaxConcurrentRunsMax, p.errors);
  p.paused = parse_flag(policy, "spec/paused", "spec.paused", p.errors);
  p.cancel_running = parse_flag(policy, "spec/cancelRunning", "spec.cancelRunning", p.errors);
  p.finish_on_exceeded = parse_on_exceeded(policy, p.errors);
  p.require_pricing = parse_flag(policy, "spec/requirePricing", "spec.requirePricing", p.errors);
  p.forbid_self_reported_usage =
      parse_flag(policy, "spec/forbidSelfReportedUsage", "spec.forbidSelfReportedUsage", p.errors);
  parse_policy_pricing(policy, p);
  return p;
}

}  // namespace hb::controllers
