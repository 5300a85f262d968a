#include "controllers/run_cost.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "api/agent_types.h"
#include "api/heartbeat_pod.h"
#include "controllers/spend_ledger.h"

namespace hb::controllers {
namespace {

constexpr double kTokensPerMillion = 1e6;

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
  return problem;
}

}  // namespace

UsageCounts usage_field_max(const UsageCounts& a, const UsageCounts& b) {
  return {std::max(a.llm_calls, b.llm_calls), std::max(a.input_tokens, b.input_tokens),
          std::max(a.output_tokens, b.output_tokens), std::max(a.tool_calls, b.tool_calls),
          std::max(a.iterations, b.iterations)};
}

bool usage_below_in_some_field(const UsageCounts& a, const UsageCounts& b) {
  return a.llm_calls < b.llm_calls || a.input_tokens < b.input_tokens ||
         a.output_tokens < b.output_tokens || a.tool_calls < b.tool_calls ||
         a.iterations < b.iterations;
}

int64_t saturating_add(int64_t a, int64_t b) {
  int64_t out = 0;
  if (__builtin_add_overflow(a, b, &out)) {
    return b > 0 ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min();
  }
  return out;
}

int64_t saturating_mul(int64_t a, int64_t b) {
  int64_t out = 0;
  if (__builtin_mul_overflow(a, b, &out)) {
    return (a < 0) != (b < 0) ? std::numeric_limits<int64_t>::min()
                              : std::numeric_limits<int64_t>::max();
  }
  return out;
}

UsageBounds usage_bounds(const AgentSpec& spec) {
  const int64_t calls = api::capabilities(spec.type).max_iterations;
  return {calls, saturating_mul(calls, api::kInputTokensPerModelCallMax),
          saturating_mul(calls, std::max<int64_t>(1, spec.max_tokens))};
}

double cost_cents(int64_t input_tokens, int64_t output_tokens, const Pricing& pricing) {
  const double in = static_cast<double>(std::max<int64_t>(0, input_tokens));
  const double out = static_cast<double>(std::max<int64_t>(0, output_tokens));
  const double cents = in * pricing.input_cents_per_million_tokens / kTokensPerMillion +
                       out * pricing.output_cents_per_million_tokens / kTokensPerMillion;
  return std::isfinite(cents) ? round_to_spend_resolution(cents) : 0;
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
  charge.cost_cents = cost_cents(charge.usage.input_tokens, charge.usage.output_tokens, in.pricing);
  if (in.runner_cost_cents) {
    charge.runner_cost_cents = *in.runner_cost_cents;
    charge.cost_mismatch =
        !std::isfinite(*in.runner_cost_cents) ||
        std::fabs(*in.runner_cost_cents - charge.cost_cents) > kCostMismatchToleranceCents;
  }
  return charge;
}

}  // namespace hb::controllers
