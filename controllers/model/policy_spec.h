// HeartbeatPolicy's spec (crds/heartbeat.dev_heartbeatpolicies.yaml) as a
// typed value: a team's budget, concurrency cap, kill switch (spec.paused)
// and prices over the Agents of its namespace that its selector picks.
// parse_policy is the one reader of a policy's spec; errors name the field.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "controllers/model/json_util.h"
#include "controllers/model/label_selector.h"

namespace date {
class time_zone;
}

namespace hb::controllers {

inline constexpr const char* kPolicyKind = "HeartbeatPolicy";
// The CRD's bound on spec.maxConcurrentRuns (the operator-wide flag's too).
inline constexpr int64_t kPolicyMaxConcurrentRunsMax = 100000;

// One entry of spec.pricing: the team's price for a provider's model ("*":
// any model of the provider), cents per million tokens.
struct PolicyPrice {
  std::string provider;  // "openai" | "anthropic"
  std::string model;     // exact spec.model.model, or "*"
  double input_cents_per_million_tokens = 0;
  double output_cents_per_million_tokens = 0;
  // Prompt-cache reads and writes; unset: this entry's input price.
  std::optional<double> cached_input_cents_per_million_tokens = std::nullopt;
  std::optional<double> cache_write_input_cents_per_million_tokens = std::nullopt;
};

struct PolicySpec {
  std::string ns;
  std::string name;
  int64_t generation = 0;
  LabelSelector selector;            // empty: every Agent of the namespace
  int64_t monthly_budget_cents = 0;  // <= 0: no team budget
  int64_t daily_budget_cents = 0;    // spec.budget.dailyCents; <= 0: no team daily budget
  // spec.timeZone: the zone its days are counted in; nullptr: UTC.
  const date::time_zone* time_zone = nullptr;
  int64_t max_concurrent_runs = 0;   // <= 0: no cap
  int64_t per_run_tokens = 0;        // spec.budget.perRunTokens; 0: no cap
  bool paused = false;               // spec.paused: no run of a selected agent starts
  bool cancel_running = false;       // spec.cancelRunning: with paused, runs in flight end too
  bool finish_on_exceeded = false;   // spec.onExceeded: Finish (default Cancel)
  std::vector<PolicyPrice> pricing;  // spec.pricing
  bool require_pricing = false;      // spec.requirePricing
  bool forbid_self_reported_usage = false;  // spec.forbidSelfReportedUsage
  std::vector<std::string> errors;  // each names the field; a policy with errors sets no limit

  bool valid() const { return errors.empty(); }
  // Whether it selects an Agent of its namespace with these labels. An
  // invalid policy selects nothing: a typo must not stop a whole team.
  bool selects(const std::map<std::string, std::string>& agent_labels) const;
};

PolicySpec parse_policy(const Json& policy);

// The CRD's maxItems of spec.pricing.
inline constexpr std::size_t kPolicyPricesMax = 256;

}  // namespace hb::controllers
