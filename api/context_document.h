// The context document: everything one heartbeat needs. The operator renders
// it and mounts it read-only into the Job; the runner parses it. Schema:
// docs/context-document.md. Pure.
#pragma once

#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/agent_types.h"
#include "api/contract_limits.h"
#include "api/expected.h"
#include "api/rfc3339.h"
#include "api/run_metadata.h"

namespace hb::api {

inline constexpr int kContextDocumentVersion = 1;
inline constexpr const char* kContextDocumentKind = "HeartbeatContext";

enum class Provider { kOpenAI, kAnthropic };
std::string_view to_string(Provider provider);
std::optional<Provider> parse_provider(std::string_view name);

struct Pricing {
  double input_cents_per_million_tokens = 0;
  double output_cents_per_million_tokens = 0;
  // Prompt-cache reads and writes; unset (a document without them): the
  // input price.
  std::optional<double> cached_input_cents_per_million_tokens = std::nullopt;
  std::optional<double> cache_write_input_cents_per_million_tokens = std::nullopt;
  bool operator==(const Pricing&) const = default;
};

struct ModelConfig {
  Provider provider = Provider::kOpenAI;
  std::string model;
  std::string base_url;  // parsed: defaulted per provider when absent; rendered when set
  int max_tokens = kMaxTokensDefault;
  Pricing pricing;
  bool operator==(const ModelConfig&) const = default;
};

struct MemoryBlock {
  std::string label;
  std::string value;
  int limit = kCoreMemoryBlockLimitDefault;  // characters
  bool operator==(const MemoryBlock&) const = default;
};

// An earlier run of the agent, shown to the model before the prompt.
struct RecentRun {
  std::string name;
  std::string finished_at;  // RFC 3339 as the run's status says; may be empty
  std::string phase;
  std::string stop_reason;
  std::string output;  // at most kRecentRunOutputBytesMax bytes
  bool operator==(const RecentRun&) const = default;
};

struct RunIdentity {
  std::string name;
  std::string uid;
  std::string invocation_source = "scheduler";  // scheduler | manual | callback
  std::string trigger_detail;
  RunMetadata metadata;  // a wakeup's task id, priority… (api/run_metadata.h)
  std::optional<TimePoint> scheduled_time;
  TimePoint deadline{};  // the Job's deadline; the loop stops short of it
  bool operator==(const RunIdentity&) const = default;
};

// The agent's Lease, which the runner's beats renew.
struct LeaseConfig {
  std::string name;
  // Written as the Lease's leaseDurationSeconds: without a renewal this long
  // the operator fails the run as Stalled.
  std::chrono::seconds stall_window = kRunStallWindowDefault;
  std::chrono::seconds renew_interval = kLeaseRenewIntervalDefault;  // at most one renewal per
  bool operator==(const LeaseConfig&) const = default;
};

struct Budget {
  std::optional<double> per_run_cents;
  std::optional<double> month_remaining_cents;
  // budget.perRunTokens: input plus output tokens of the whole run; none: no cap.
  std::optional<int64_t> per_run_tokens;
  // What the day's budgets (the Agent's and its teams' spec.budget.dailyCents)
  // leave the run when they bound it; none: no daily budget bounds it.
  std::optional<double> day_remaining_cents = {};
  // The smallest of the three, or none when none is set.
  std::optional<double> run_limit_cents() const;
  bool operator==(const Budget&) const = default;
};

struct ContextDocument {
  std::string agent_name;
  std::string agent_namespace;
  AgentType agent_type = kAgentTypeDefault;
  ModelConfig model;
  std::string persona;
  std::vector<MemoryBlock> memory_blocks;
  std::string memory_config_map;  // empty: edits live only for this heartbeat
  std::string heartbeat_prompt;
  Budget budget;
  // Oldest first, the order the model reads them in (docs/context-document.md).
  std::vector<RecentRun> recent_runs;
  RunIdentity run;
  std::optional<LeaseConfig> lease;
  std::string archival_path;  // empty: no archival storage
  // Where the full transcript goes (a directory on the archival volume;
  // empty: nowhere) and the runs whose transcripts stay there (the agent's
  // runs the operator still keeps): the runner deletes the others.
  std::string transcript_dir;
  std::vector<std::string> transcript_keep;
  bool operator==(const ContextDocument&) const = default;
};

// Rendering (operator side).
nlohmann::json render_context_document(const ContextDocument& doc);

// Parsing (runner side): the document, or the first problem found. The
// message names the offending field ("context document:
// model.pricing.inputCentsPerMillionTokens: must be a number, not string").
struct ContextDocumentError {
  std::string field;    // "model.pricing.inputCentsPerMillionTokens", "(document)"
  std::string message;  // "context document: " + field + ": " + the problem
};
using ContextDocumentResult = Expected<ContextDocument, ContextDocumentError>;
ContextDocumentResult parse_context_document(const nlohmann::json& document);
// Also bounds the text: kContextDocumentBytesMax, kContextDocumentDepthMax.
ContextDocumentResult parse_context_document_text(std::string_view text);

}  // namespace hb::api
