// Prices a run is charged at: the Agent's spec.model.pricing and the
// spec.pricing of the HeartbeatPolicies that select it. A policy's price is
// a floor the Agent's author cannot lower: per field, the higher of the
// Agent's and the policies' prices is charged. The same function feeds the
// operator's charge (run_cost.h) and the runner's per-run stop (the context
// document), so both use one price. Also what a policy refuses to run
// (spec.requirePricing, spec.forbidSelfReportedUsage). Pure.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "controllers/model/agent_spec.h"
#include "controllers/model/json_util.h"
#include "controllers/model/policy_spec.h"
#include "controllers/schedule/blocks.h"

namespace hb::controllers {

// status.charge.source values.
inline constexpr const char* kPricingSourceAgent = "agent";
inline constexpr const char* kPricingSourcePolicy = "policy";
inline constexpr const char* kPricingSourceBoth = "both";
// spec.pricing[].model matching any model of the provider.
inline constexpr const char* kAnyModel = "*";

struct EffectivePricing {
  Pricing pricing;
  // Every price set: a cache price neither names is the input price.
  // kPricingSource*: whose price was charged (per field of input, output,
  // cache read and cache write; "both" when some came from each).
  std::string source = kPricingSourceAgent;
  // "ns/name" of the policy whose price was charged (the first field's a
  // policy won); empty when none was.
  std::string policy;
  // The Agent's price or a policy's names this provider+model.
  bool priced = false;
};

// The price a policy names for provider+model: its exact entry, else its
// "*" entry for the provider; null when it names none.
const PolicyPrice* policy_price_for(const PolicySpec& policy, std::string_view provider,
                                    std::string_view model);

// `selecting`: the policies that select the agent (an invalid policy
// selects nobody, so it prices nothing). Ties go to the policy, and among
// policies to the first given.
EffectivePricing effective_pricing(const AgentSpec& agent,
                                   const std::vector<PolicySpec>& selecting);

// The run's budget.perRunTokens: the smallest non-zero of the Agent's and
// the valid selecting policies'; none when none sets one. The runner stops
// before a call whose worst case could pass it (context document).
std::optional<int64_t> effective_per_run_tokens(const AgentSpec& agent,
                                                const std::vector<PolicySpec>& selecting);

// Condition reasons of a policy refusal.
inline constexpr std::string_view kReasonPricingRequired = "PricingRequired";
inline constexpr std::string_view kReasonSelfReportedUsage = "SelfReportedUsage";

// What the selecting policies refuse: at most one block per reason (the
// first policy given that refuses). `runner_image`: the operator's
// configured runner image (--runner-image).
std::vector<schedule::Block> policy_refusals(const AgentSpec& agent,
                                             const std::vector<PolicySpec>& selecting,
                                             std::string_view runner_image);

}  // namespace hb::controllers
