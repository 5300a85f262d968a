// The context document: everything one heartbeat needs, rendered by the
// operator, mounted read-only into the Job. Schema: docs/context-document.md.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/agent_types.h"
#include "runner/clock.h"

namespace hb::runner {

enum class Provider { kOpenAI, kAnthropic };
std::string_view to_string(Provider provider);

struct Pricing {
  double input_cents_per_million_tokens = 0;
  double output_cents_per_million_tokens = 0;
};

struct ModelConfig {
  Provider provider = Provider::kOpenAI;
  std::string model;
  std::string base_url;  // defaulted per provider when absent
  int max_tokens = 0;
  Pricing pricing;
};

struct MemoryBlock {
  std::string label;
  std::string value;
  int limit = 0;  // characters

  bool operator==(const MemoryBlock&) const = default;
};

struct RecentRun {
  std::string name;
  std::string finished_at;  // RFC 3339 as written by the operator; may be empty
  std::string stop_reason;
  std::string output;
};

struct RunIdentity {
  std::string name;
  std::string invocation_source;  // scheduler | manual | callback
  std::string trigger_detail;
  std::optional<TimePoint> scheduled_time;
  TimePoint deadline;  // the Job's deadline; the loop stops kDeadlineMargin before
};

struct LeaseConfig {
  std::string name;
  std::chrono::seconds duration;
  std::chrono::seconds renew_interval;
};

struct Budget {
  std::optional<double> per_run_cents;
  std::optional<double> month_remaining_cents;
  // The smaller of the two, or none when neither is set.
  std::optional<double> run_limit_cents() const;
};

struct ContextDocument {
  std::string agent_name;
  std::string agent_namespace;
  api::AgentType agent_type = api::kAgentTypeDefault;
  ModelConfig model;
  std::string persona;
  std::vector<MemoryBlock> memory_blocks;
  std::string memory_config_map;  // empty: edits live only for this heartbeat
  std::string heartbeat_prompt;
  Budget budget;
  std::vector<RecentRun> recent_runs;
  RunIdentity run;
  std::optional<LeaseConfig> lease;
  std::string archival_path;  // empty: no archival storage
};

// Throws ConfigError naming the offending field.
ContextDocument parse_context_document(const nlohmann::json& document);
ContextDocument parse_context_document_text(std::string_view text);

}  // namespace hb::runner
