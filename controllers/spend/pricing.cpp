#include "controllers/spend/pricing.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <set>
#include <type_traits>
#include <utility>

#include "api/context_document.h"
#include "api/hb_assert.h"
#include "api/object_names.h"

namespace hb::controllers {

namespace {
// Input, output, cache read, cache write.
constexpr std::size_t kPriceFields = 4;

std::array<double, kPriceFields> price_fields(const Pricing& p) {
  // Four prices are listed below: a larger kPriceFields would leave one 0 unnoticed.
  static_assert(kPriceFields == 4);
  return {p.input_cents_per_million_tokens, p.output_cents_per_million_tokens,
          cached_input_price(p), cache_write_input_price(p)};
}

std::array<double, kPriceFields> price_fields(const PolicyPrice& p) {
  // A policy's unset cache price falls back to its input price as the Agent's does.
  static_assert(std::is_same_v<decltype(p.cached_input_cents_per_million_tokens),
                               decltype(Pricing::cached_input_cents_per_million_tokens)> &&
                std::is_same_v<decltype(p.cache_write_input_cents_per_million_tokens),
                               decltype(Pricing::cache_write_input_cents_per_million_tokens)>);
  return price_fields(Pricing{p.input_cents_per_million_tokens, p.output_cents_per_million_tokens,
                              p.cached_input_cents_per_million_tokens,
                              p.cache_write_input_cents_per_million_tokens});
}

// The highest price the policies name for one field, and whose it is (the
// first policy given on a tie).
struct PolicyField {
  double cents = 0;
  std::string policy;  // empty: no policy names a price
  void offer(double price, const std::string& key) {
    if (policy.empty() || price > cents) {
      cents = price;
      policy = key;
    }
  }
  // Charged instead of the agent's price: a tie goes to the policy (the
  // team's price is the one enforced).
  bool wins_over(double agent_price) const { return !policy.empty() && cents >= agent_price; }
};

// A price charged, and the policy whose it is (empty: the Agent's).
struct PricedField {
  double cents = 0;
  std::string policy;
};

struct PolicyFields {
  std::array<PolicyField, kPriceFields> fields;
  void offer(const PolicyPrice& price, const std::string& key) {
    HB_ASSERT_MSG(!key.empty(), "an empty policy key would read as the Agent's price");
    const std::array<double, kPriceFields> cents = price_fields(price);
    for (std::size_t i = 0; i < kPriceFields; ++i) fields[i].offer(cents[i], key);
  }
  // Per field, the higher of the Agent's price and the policies'.
  std::array<PricedField, kPriceFields> charged(const Pricing& agent) const {
    const std::array<double, kPriceFields> own = price_fields(agent);
    std::array<PricedField, kPriceFields> out;
    for (std::size_t i = 0; i < kPriceFields; ++i) {
      out[i] = fields[i].wins_over(own[i]) ? PricedField{fields[i].cents, fields[i].policy}
                                           : PricedField{own[i], ""};
      HB_ASSERT_MSG(out[i].cents >= own[i], "a policy's price wins only by being higher");
    }
    return out;
  }
};

}  // namespace

const PolicyPrice* policy_price_for(const PolicySpec& policy, std::string_view provider,
                                    std::string_view model) {
  const PolicyPrice* any = nullptr;
  for (const PolicyPrice& p : policy.pricing) {
    if (p.provider != provider) continue;
    if (p.model == model) return &p;
    if (p.model == kAnyModel) any = &p;
  }
  HB_ASSERT_MSG(any == nullptr || any->provider == provider, "a price is the provider's own");
  return any;
}

EffectivePricing effective_pricing(const AgentSpec& agent,
                                   const std::vector<PolicySpec>& selecting) {
  EffectivePricing out;
  out.priced = agent.pricing.input_cents_per_million_tokens > 0 ||
               agent.pricing.output_cents_per_million_tokens > 0;
  PolicyFields policies;
  for (const PolicySpec& policy : selecting) {
    if (!policy.valid()) continue;
    const PolicyPrice* price = policy_price_for(policy, agent.provider, agent.model);
    if (price == nullptr) continue;
    out.priced = true;
    policies.offer(*price, object_key(policy.ns, policy.name));
  }
  const std::array<PricedField, kPriceFields> fields = policies.charged(agent.pricing);
  out.pricing = {fields[0].cents, fields[1].cents, fields[2].cents, fields[3].cents};
  const auto won = static_cast<std::size_t>(std::count_if(
      fields.begin(), fields.end(), [](const PricedField& f) { return !f.policy.empty(); }));
  if (won == kPriceFields) {
    out.source = kPricingSourcePolicy;
  } else if (won > 0) {
    out.source = kPricingSourceBoth;
  }
  for (const PricedField& f : fields) {
    if (!f.policy.empty()) {
      out.policy = f.policy;
      break;
    }
  }
  HB_ASSERT_MSG(
      out.pricing.input_cents_per_million_tokens >= agent.pricing.input_cents_per_million_tokens &&
          out.pricing.output_cents_per_million_tokens >=
              agent.pricing.output_cents_per_million_tokens,
      "a policy's price only ever raises the Agent's");
  return out;
}

std::optional<int64_t> effective_per_run_tokens(const AgentSpec& agent,
                                                const std::vector<PolicySpec>& selecting) {
  std::optional<int64_t> out;
  auto offer = [&out](int64_t cap) {
    if (cap > 0 && (!out || cap < *out)) out = cap;
  };
  offer(agent.per_run_tokens);
  for (const PolicySpec& policy : selecting) {
    if (policy.valid()) offer(policy.per_run_tokens);
  }
  HB_ASSERT_MSG(!out || (*out > 0 && (agent.per_run_tokens <= 0 || *out <= agent.per_run_tokens)),
                "a policy's token cap only ever narrows the Agent's");
  return out;
}

std::vector<schedule::Block> policy_refusals(const AgentSpec& agent,
                                             const std::vector<PolicySpec>& selecting,
                                             std::string_view runner_image) {
  std::vector<schedule::Block> out;
  const EffectivePricing priced = effective_pricing(agent, selecting);
  for (const PolicySpec& policy : selecting) {
    if (!policy.valid() || !policy.require_pricing || priced.priced) continue;
    out.push_back({std::string(kReasonPricingRequired),
                   "HeartbeatPolicy " + policy.name +
                       " requires a price (spec.requirePricing) and none is set for provider " +
                       api::quote_untrusted(agent.provider) + " model \"" +
                       api::quote_untrusted(agent.model) +
                       "\"; add it to the policy's spec.pricing (or the Agent's "
                       "spec.model.pricing) to run heartbeats"});
    break;
  }
  const bool command = agent.mode == RuntimeMode::kCommand;
  const bool foreign_image = !agent.runtime_image.empty() && agent.runtime_image != runner_image;
  if (!command && !foreign_image) return out;
  for (const PolicySpec& policy : selecting) {
    if (!policy.valid() || !policy.forbid_self_reported_usage) continue;
    const std::string what = command ? std::string("spec.runtime.mode is command")
                                     : "spec.runtime.image \"" +
                                           api::quote_untrusted(agent.runtime_image) +
                                           "\" is not the operator's runner image \"" +
                                           api::quote_untrusted(runner_image) + "\"";
    out.push_back({std::string(kReasonSelfReportedUsage),
                   "HeartbeatPolicy " + policy.name +
                       " forbids self-reported usage (spec.forbidSelfReportedUsage) and " + what +
                       "; no heartbeat runs until the Agent uses the operator's runner"});
    break;
  }
  HB_ASSERT_MSG(out.size() <= 2, "one refusal of each kind: the first policy's");
  return out;
}

}  // namespace hb::controllers
