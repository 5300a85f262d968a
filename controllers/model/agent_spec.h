// The Agent spec as the operator uses it, with the checks the CRD schema
// cannot make (one of interval/schedule, a provider we know, the API-key
// Secret existing, prompt xor promptFrom, command mode fields). Pure.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "api/agent_types.h"
#include "api/context_document.h"
#include "api/contract_limits.h"
#include "controllers/model/idle_backoff.h"
#include "controllers/model/json_util.h"
#include "controllers/model/mentions.h"
#include "controllers/schedule/slots.h"

namespace date {
class time_zone;
}

namespace hb::controllers {

inline constexpr int64_t kRuntimeTimeoutSecondsDefault = 600;
inline constexpr int64_t kRuntimeGraceSecondsDefault = 30;
inline constexpr int kContextRunsDefault = 3;
inline constexpr int kContextRunsMax = 20;  // the CRD's maximum too
static_assert(kContextRunsDefault <= kContextRunsMax);
// Every earlier output the document may carry takes at most half of it,
// leaving the rest to the persona, memory and prompt.
static_assert(kContextRunsMax * api::kRecentRunOutputBytesMax <= api::kContextDocumentBytesMax / 2);
// The CRD's maximum too (tests/unit/controllers: the two agree).
inline constexpr int64_t kStartingDeadlineSecondsMax = 31'536'000;  // 365 days
inline constexpr int kHistorySucceededDefault = 10;
inline constexpr int kHistoryFailedDefault = 5;

struct KeyRef {
  std::string name;
  std::string key;
};

enum class RuntimeMode { kBuiltin, kCommand };

// spec.budget.resume: after the monthly budget stops heartbeats, whether
// they wait for a person (the default) or resume when the UTC
// month turns.
enum class BudgetResume { kManual, kNextPeriod };

// spec.model.pricing: what the operator charges a run (never the runner's figure).
struct Pricing {
  double input_cents_per_million_tokens = 0;
  double output_cents_per_million_tokens = 0;
  // Prompt-cache reads and writes, parts of the input the runner reports
  // (api/run_result.h); unset: the input price.
  std::optional<double> cached_input_cents_per_million_tokens = std::nullopt;
  std::optional<double> cache_write_input_cents_per_million_tokens = std::nullopt;
};
inline double cached_input_price(const Pricing& p) {
  return p.cached_input_cents_per_million_tokens.value_or(p.input_cents_per_million_tokens);
}
inline double cache_write_input_price(const Pricing& p) {
  return p.cache_write_input_cents_per_million_tokens.value_or(p.input_cents_per_million_tokens);
}
// The CRD's maximum for either price ($1M per million tokens): keeps every
// cost finite and exact enough in a double.
inline constexpr double kPriceCentsPerMillionTokensMax = 1e8;
// spec.model.maxTokens when unset, as the runner uses it (runner/limits.h).
inline constexpr int64_t kModelMaxTokensDefault = 1024;
inline constexpr int64_t kModelMaxTokensMax = 200000;

// One entry of spec.runtime.env: its name (empty when not a string), and
// the entry as written, which the Job copies without a look inside.
struct EnvEntry {
  std::string name;
  Json entry;
};

struct AgentSpec {
  // Identity.
  std::string api_version, kind;  // for the ownerReferences to it
  std::string name, ns, uid;
  int64_t generation = 0;
  TimePoint created{};
  bool deleting = false;
  // Spec.
  api::AgentType type = api::kAgentTypeDefault;
  std::string provider;  // "openai" | "anthropic"
  std::string model;     // spec.model.model
  std::string base_url;  // spec.model.baseURL; empty: the provider's
  std::optional<KeyRef> api_key;
  Pricing pricing;
  int64_t max_tokens = kModelMaxTokensDefault;  // per model call
  std::optional<schedule::Schedule> schedule;   // none: manual and callback runs only
  std::optional<int64_t> starting_deadline_seconds;
  std::optional<IdleBackoff> idle_backoff;  // interval schedules only
  MentionPolicy mentions;                   // who may wake this agent by @name
  int context_runs = kContextRunsDefault;
  int history_succeeded = kHistorySucceededDefault;
  int history_failed = kHistoryFailedDefault;
  bool paused = false;
  int64_t monthly_budget_cents = 0;  // <= 0: unlimited
  int64_t daily_budget_cents = 0;    // spec.budget.dailyCents; <= 0: unlimited
  // The zone its days are counted in: spec.heartbeat.timeZone; nullptr: UTC.
  const date::time_zone* time_zone = nullptr;
  BudgetResume budget_resume = BudgetResume::kManual;
  std::optional<double> per_run_cents;
  int64_t per_run_tokens = 0;  // spec.budget.perRunTokens; 0: no cap
  RuntimeMode mode = RuntimeMode::kBuiltin;
  std::string runtime_image;       // spec.runtime.image; empty: the operator's runner image
  bool command_may_pause = false;  // spec.runtime.pauseHeartbeats (command mode)
  int64_t timeout_seconds = kRuntimeTimeoutSecondsDefault;
  int64_t grace_seconds = kRuntimeGraceSecondsDefault;
  std::optional<KeyRef> prompt_from;
  // spec.memory.archival.persistentVolumeClaimName: also where transcripts are stored.
  std::string archival_claim;
  std::string persona;                          // spec.persona
  std::vector<api::MemoryBlock> memory_blocks;  // spec.memory.blocks: initial core memory
  // What the Pod takes as written: read once here, copied into the Job
  // (job_builder.h) without a look inside.
  Json runtime = Json::object();          // spec.runtime: its Pod settings (pod_settings.h)
  Json runtime_command;                   // spec.runtime.command when an array; else null
  std::vector<EnvEntry> runtime_env;      // spec.runtime.env when an array
  std::optional<Json> runtime_resources;  // spec.runtime.resources when set
  std::string tools_image;                // spec.runtime.tools.image; empty: the operator's
  std::optional<Json> tools_resources;    // spec.runtime.tools.resources when set
  std::string runtime_class_name;         // spec.runtime.runtimeClassName
  // spec.heartbeat.prompt is the prompt and it is empty or only whitespace:
  // scheduled heartbeats are skipped (there is nothing to do).
  bool prompt_blank = false;
};

// What the caller looked up outside the object (so this stays pure).
struct SpecEnvironment {
  // An object the operator would own for this Agent (its memory ConfigMap,
  // Lease, ServiceAccount, Role, RoleBinding) exists without this Agent's
  // ownerReference, e.g. "ConfigMap team-a/x-memory". Never adopted.
  std::string object_in_the_way;
};

struct SpecCheck {
  AgentSpec spec;                   // filled as far as it parsed
  std::vector<std::string> errors;  // each names the field; empty = valid
  bool valid() const { return errors.empty(); }
  std::string message() const;  // errors joined by "; "
};

// The agent's spec.heartbeat.contextRuns (its default when unset).
int64_t context_runs_of(const Json& agent);

// spec.memory.blocks of an Agent's spec (limits defaulted).
std::vector<api::MemoryBlock> parse_memory_blocks(const Json& spec);

// The checks that need only the object: done once per stored version.
SpecCheck parse_agent_spec(const Json& agent);
// A parsed spec's errors plus those that need the cluster (the API-key Secret).
std::vector<std::string> spec_errors(const SpecCheck& parsed, const SpecEnvironment& env);
// Both at once.
SpecCheck check_agent_spec(const Json& agent, const SpecEnvironment& env);
// Errors joined by "; ".
std::string join_errors(const std::vector<std::string>& errors);

// Whether a run's pauseMinutes moves the schedule: the agent type supports
// heartbeats (api/agent_types.h, the table the runner offers tools from),
// or a command runner whose Agent sets spec.runtime.pauseHeartbeats.
bool pause_allowed(const AgentSpec& spec);

}  // namespace hb::controllers
