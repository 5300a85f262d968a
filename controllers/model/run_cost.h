// What a run is charged. Money is the operator's: cost = tokens x the
// effective prices (pricing.h), never the figure the runner reports (that is
// kept only as a cross-check). Tokens are the larger of the highest Lease
// beat report seen and the final result, field by field, so a runner killed
// mid-run is charged for what it reported, and neither a result nor a Lease
// rewritten lower can lower the charge; both are bounded by what the run
// could have used, so no report can overflow the spend. Pure.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "api/saturating.h"
#include "api/usage_report.h"
#include "controllers/model/agent_spec.h"

namespace hb::controllers {

// Reason of a run charged its bound instead of its report.
inline constexpr const char* kReasonUsageOutOfBounds = "UsageOutOfBounds";
// A run's tokens passed its budget.perRunTokens by more than one call's worth.
inline constexpr const char* kReasonTokenCapExceeded = "TokenCapExceeded";
// The runner's own figure may differ from ours by rounding only.
inline constexpr double kCostMismatchToleranceCents = 0.001;

using api::UsageCounts;

// The counts of a usage report the runner wrote on its Lease.
UsageCounts usage_counts(const api::UsageReport& report);

// The most one heartbeat can use: the type's model calls, each with
// api::kInputTokensPerModelCallMax input and spec.model.maxTokens output.
struct UsageBounds {
  int64_t llm_calls = 0;
  int64_t input_tokens = 0;
  int64_t output_tokens = 0;
};
UsageBounds usage_bounds(const AgentSpec& spec);

struct ChargeInput {
  std::optional<UsageCounts> result;  // the termination message's usage
  // The result's usage object was there but malformed (negative, not an
  // integer, too large): charged the bound, named in the run's reason.
  std::string result_usage_problem;
  std::optional<double> runner_cost_cents;  // the runner's own figure
  std::optional<UsageCounts> beat;          // the highest Lease beat report of this run seen
  Pricing pricing;
  UsageBounds bounds;
};

struct Charge {
  UsageCounts usage;  // what is recorded (bounded)
  double cost_cents = 0;
  std::string out_of_bounds;  // why the bound was charged; empty: the report stands
  std::optional<double> runner_cost_cents;
  bool cost_mismatch = false;  // the runner's figure differs from ours
};

Charge charge_run(const ChargeInput& input);

// The larger of the two, field by field (usage reports are cumulative).
UsageCounts usage_field_max(const UsageCounts& a, const UsageCounts& b);
// Whether `a` is below `b` in some field: a report lower than one made before.
bool usage_below_in_some_field(const UsageCounts& a, const UsageCounts& b);

using api::saturating_add;  // api/saturating.h
using api::saturating_mul;
// The cache counts of `usage` when believed: together within input_tokens;
// else none, so every input token is charged the input price.
UsageCounts believed_cache_counts(UsageCounts usage);
// tokens x pricing, rounded to the spend resolution; finite for any tokens.
// Cache reads and writes at their prices when believed, the rest of the
// input at the input price.
double cost_cents(const UsageCounts& usage, const Pricing& pricing);
double cost_cents(int64_t input_tokens, int64_t output_tokens, const Pricing& pricing);

}  // namespace hb::controllers
