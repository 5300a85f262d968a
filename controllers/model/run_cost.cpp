#include "controllers/model/run_cost.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "api/agent_types.h"
#include "api/hb_assert.h"
#include "api/heartbeat_pod.h"
#include "controllers/model/spend_ledger.h"

namespace hb::controllers {
namespace {

constexpr double kTokensPerMillion = 1e6;
// A model call's input bound is a positive count (a bound of 0 would charge
// any run nothing).
static_assert(api::kInputTokensPerModelCallMax > 0);
// Four fields of any int64 count at the dearest valid price stay a finite
// double: a valid Agent's cost is never clamped to 0 as infinite.
static_assert(4 * 9.3e18 * kPriceCentsPerMillionTokensMax < std::numeric_limits<double>::max());
static_assert(kModelMaxTokensDefault <= kModelMaxTokensMax);

// Clamps every bounded field; says which passed its bound.
std::string clamp_to_bounds(UsageCounts& usage, const UsageBounds& bounds) {
  std::string problem;
  auto clamp = [&](int64_t& value, int64_t bound, const char* what) {
    if (value <= bound) return;
    if (problem.empty()) {
      problem = "the runner reported " + std::to_string(value) + " " + what +
                ", more than the run could use (" + std::to_string(bound) + ")";
    }
    value = bound;
  };
  clamp(usage.llm_calls, bounds.llm_calls, "model calls");
  clamp(usage.iterations, bounds.llm_calls, "iterations");
  clamp(usage.input_tokens, bounds.input_tokens, "input tokens");
  clamp(usage.output_tokens, bounds.output_tokens, "output tokens");
  HB_ASSERT_MSG(usage.llm_calls <= bounds.llm_calls && usage.iterations <= bounds.llm_calls &&
                    usage.input_tokens <= bounds.input_tokens &&
                    usage.output_tokens <= bounds.output_tokens,
                "every bounded count is within its bound once clamped");
  return problem;
}

// A bound charged is charged at the input price.
UsageCounts without_cache_counts(UsageCounts usage) {
  usage.cache_read_input_tokens = 0;
  usage.cache_write_input_tokens = 0;
  return usage;
}

}  // namespace

UsageCounts usage_counts(const api::UsageReport& r) {
  return r;
}

UsageCounts usage_field_max(const UsageCounts& a, const UsageCounts& b) {
  const UsageCounts high{std::max(a.llm_calls, b.llm_calls),
                         std::max(a.input_tokens, b.input_tokens),
                         std::max(a.output_tokens, b.output_tokens),
                         std::max(a.tool_calls, b.tool_calls),
                         std::max(a.iterations, b.iterations),
                         std::max(a.cache_read_input_tokens, b.cache_read_input_tokens),
                         std::max(a.cache_write_input_tokens, b.cache_write_input_tokens)};
  HB_ASSERT_MSG(!usage_below_in_some_field(high, a) && !usage_below_in_some_field(high, b),
                "no report lowers the usage kept");
  return high;
}

bool usage_below_in_some_field(const UsageCounts& a, const UsageCounts& b) {
  return a.llm_calls < b.llm_calls || a.input_tokens < b.input_tokens ||
         a.output_tokens < b.output_tokens || a.tool_calls < b.tool_calls ||
         a.iterations < b.iterations || a.cache_read_input_tokens < b.cache_read_input_tokens ||
         a.cache_write_input_tokens < b.cache_write_input_tokens;
}

UsageBounds usage_bounds(const AgentSpec& spec) {
  const int64_t calls = api::capabilities(spec.type).max_iterations;
  HB_ASSERT_MSG(calls >= 1, "every agent type makes at least one model call");
  return {calls, saturating_mul(calls, api::kInputTokensPerModelCallMax),
          saturating_mul(calls, std::max<int64_t>(1, spec.max_tokens))};
}

UsageCounts believed_cache_counts(UsageCounts usage) {
  const bool believed =
      usage.input_tokens >= 0 && usage.cache_read_input_tokens >= 0 &&
      usage.cache_write_input_tokens >= 0 && usage.cache_read_input_tokens <= usage.input_tokens &&
      usage.cache_write_input_tokens <= usage.input_tokens - usage.cache_read_input_tokens;
  if (!believed) {
    usage.cache_read_input_tokens = 0;
    usage.cache_write_input_tokens = 0;
  }
  HB_ASSERT_MSG(
      usage.cache_read_input_tokens >= 0 && usage.cache_write_input_tokens >= 0 &&
          (usage.cache_read_input_tokens + usage.cache_write_input_tokens == 0 ||
           usage.cache_write_input_tokens <= usage.input_tokens - usage.cache_read_input_tokens),
      "the cache counts believed are parts of the input tokens");
  return usage;
}

double cost_cents(const UsageCounts& usage, const Pricing& pricing) {
  const UsageCounts u = believed_cache_counts(usage);
  const auto tokens = [](int64_t count) {
    return static_cast<double>(std::max<int64_t>(0, count));
  };
  const int64_t uncached = u.input_tokens - u.cache_read_input_tokens - u.cache_write_input_tokens;
  const double per_million = tokens(uncached) * pricing.input_cents_per_million_tokens +
                             tokens(u.cache_read_input_tokens) * cached_input_price(pricing) +
                             tokens(u.cache_write_input_tokens) * cache_write_input_price(pricing) +
                             tokens(u.output_tokens) * pricing.output_cents_per_million_tokens;
  const double cents = per_million / kTokensPerMillion;
  const double out = std::isfinite(cents) ? round_to_spend_resolution(cents) : 0;
  HB_ASSERT_MSG(std::isfinite(out), "a cost is finite for any tokens and prices");
  HB_ASSERT_MSG(!(out < 0) || pricing.input_cents_per_million_tokens < 0 ||
                    pricing.output_cents_per_million_tokens < 0 ||
                    cached_input_price(pricing) < 0 || cache_write_input_price(pricing) < 0,
                "a cost at prices of 0 or more is never negative");
  return out;
}

double cost_cents(int64_t input_tokens, int64_t output_tokens, const Pricing& pricing) {
  UsageCounts usage;
  usage.input_tokens = input_tokens;
  usage.output_tokens = output_tokens;
  return cost_cents(usage, pricing);
}

Charge charge_run(const ChargeInput& in) {
  Charge charge;
  charge.usage =
      usage_field_max(in.result.value_or(UsageCounts{}), in.beat.value_or(UsageCounts{}));
  if (!in.result_usage_problem.empty()) {
    charge.usage.llm_calls = std::max(charge.usage.llm_calls, in.bounds.llm_calls);
    charge.usage.input_tokens = in.bounds.input_tokens;
    charge.usage.output_tokens = in.bounds.output_tokens;
    charge.out_of_bounds = in.result_usage_problem;
  }
  if (std::string problem = clamp_to_bounds(charge.usage, in.bounds); charge.out_of_bounds.empty())
    charge.out_of_bounds = problem;
  charge.usage = charge.out_of_bounds.empty() ? believed_cache_counts(charge.usage)
                                              : without_cache_counts(charge.usage);
  charge.cost_cents = cost_cents(charge.usage, in.pricing);
  HB_ASSERT(charge.usage.llm_calls >= 0 && charge.usage.llm_calls <= in.bounds.llm_calls);
  HB_ASSERT(charge.usage.input_tokens >= 0 && charge.usage.input_tokens <= in.bounds.input_tokens);
  HB_ASSERT(charge.usage.output_tokens >= 0 &&
            charge.usage.output_tokens <= in.bounds.output_tokens);
  if (in.runner_cost_cents) {
    charge.runner_cost_cents = *in.runner_cost_cents;
    charge.cost_mismatch =
        !std::isfinite(*in.runner_cost_cents) ||
        std::fabs(*in.runner_cost_cents - charge.cost_cents) > kCostMismatchToleranceCents;
  }
  return charge;
}

}  // namespace hb::controllers
