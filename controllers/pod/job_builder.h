// What the Agent reconciler builds to start a run: the context document, the Job, and the
// per-agent objects a Job needs (ServiceAccount, Role, RoleBinding, Lease,
// memory ConfigMap). Pure functions of (run, agent, config, now).
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/context_document.h"
#include "api/contract_limits.h"
#include "api/env_names.h"
#include "api/heartbeat_pod.h"
#include "controllers/model/agent_spec.h"
#include "controllers/model/json_util.h"
#include "controllers/model/run_view.h"
#include "controllers/model/spend_ledger.h"
#include "controllers/run/earlier_runs.h"
#include "controllers/schedule/blocks.h"

namespace hb::controllers {

using namespace std::chrono_literals;

// The runner image's non-root user (distroless "nonroot"); the tools
// container runs as another (api/heartbeat_pod.h).
inline constexpr int64_t kRunnerUserId = api::kRunnerUserId;
inline constexpr const char* kTmpSizeLimit = "64Mi";
inline constexpr const char* kToolsSocketSizeLimit = "1Mi";
inline constexpr const char* kWorkspaceSizeLimitDefault = "1Gi";
// A pod-template annotation may carry the context up to this size (all
// annotations of an object together may not pass 256 KiB).
inline constexpr std::size_t kContextAnnotationBytesMax = 128 * 1024;

using api::kArchivalVolume;
using api::kTerminationPath;

enum class ContextTransport {
  kConfigMap,   // a ConfigMap owned by the run (one more write per heartbeat)
  kAnnotation,  // a pod-template annotation read through a downwardAPI volume;
                // falls back to a ConfigMap when the document is too large
};

struct JobConfig {
  std::string default_image = "ghcr.io/heartbeat-operator/heartbeat-runner:latest";
  std::vector<std::string> runner_command = {"/usr/local/bin/heartbeat-runner"};
  std::string image_pull_policy = "IfNotPresent";
  // Seconds without a beat before a run is failed as Stalled (--stall-timeout);
  // written as the agent Lease's duration.
  std::chrono::seconds stall_window = api::kRunStallWindowDefault;
  ContextTransport context_transport = ContextTransport::kAnnotation;
  // The tools container (builtin mode): its image (empty: the runner's) and
  // resources (a Pod container's `resources`; empty: none set), unless the
  // Agent's spec.runtime.tools says otherwise.
  std::string tools_image;
  Json tools_resources = Json::object();
  // The runner container's resources unless the Agent's spec.runtime.resources
  // says otherwise (--runner-resources; empty: none set). Its memory limit is
  // what bounds a runner whatever its model sends.
  Json runner_resources = Json::object();
  // Fleet-wide Pod settings an Agent's spec.runtime overrides (pod_settings.h).
  Json pod_defaults = Json::object();
  // The runner's OpenTelemetry trace export (--runner-otel-endpoint,
  // --runner-otel-headers-secret): OTEL_EXPORTER_OTLP_ENDPOINT, and
  // OTEL_EXPORTER_OTLP_HEADERS from key `headers` of this Secret in the run's
  // namespace (optional: a namespace without it exports without headers).
  // Empty: not set; an Agent's spec.runtime.env of the same name wins.
  std::string otel_endpoint;
  std::string otel_headers_secret;
  // The operator's own OTEL_SEMCONV_STABILITY_OPT_IN (api/trace_context.h),
  // passed on to the runner unless the Agent sets it; empty: not set.
  std::string semconv_opt_in;
};

struct ContextInput {
  const AgentSpec* agent = nullptr;  // parse_agent_spec of a valid Agent
  const StartingRun* run = nullptr;
  std::string heartbeat_prompt;         // resolved (spec.prompt or the ConfigMap key)
  std::vector<EarlierRun> recent_runs;  // the agent's runs (earlier_runs), any order
  TimePoint now{};
  // What is held ahead for the run out of the monthly budgets over it
  // (budget_hold_ahead.h); none when no budget is over it. The runner stops
  // before a call whose worst case could pass the smaller of this and the
  // Agent's own.
  std::optional<double> budget_left_cents{};
  // A daily budget is what bounds budget_left_cents: the runner is told it
  // as the day's (its stop then says daily_budget).
  bool budget_left_is_daily = false;
  // The Agent's status.spend (agent_spend): what its monthly budget
  // has left this month.
  Spend spend{};
};

// The document the runner reads (docs/context-document.md). Throws
// std::invalid_argument on a provider the spec check rejects.
// `pricing`: the price the run is charged at (pricing.h effective_pricing),
// which the runner's per-run budget stop uses; unset: the Agent's
// spec.model.pricing. `per_run_tokens`: the run's token cap (pricing.h
// effective_per_run_tokens); unset: the Agent's spec.budget.perRunTokens.
api::ContextDocument context_document(const ContextInput& input, const JobConfig& config,
                                      const std::optional<Pricing>& pricing = std::nullopt,
                                      std::optional<int64_t> per_run_tokens = std::nullopt);
// The same as JSON (api::render_context_document).
Json render_context(const ContextInput& input, const JobConfig& config,
                    const std::optional<Pricing>& pricing = std::nullopt,
                    std::optional<int64_t> per_run_tokens = std::nullopt);

// The names of the runs recent_runs_oldest_first would show whose output the
// cache dropped (cache_projection.h): read them from the API server first.
std::vector<std::string> context_runs_to_read(const std::vector<EarlierRun>& runs,
                                              const std::string& current_run, int64_t context_runs);

// The last `context_runs` finished runs other than `current_run`, oldest
// first (the order the runner shows them to the model), outputs cut to
// api::kRecentRunOutputBytesMax.
std::vector<api::RecentRun> recent_runs_oldest_first(const std::vector<EarlierRun>& runs,
                                                     const std::string& current_run,
                                                     int64_t context_runs);

struct JobPlan {
  Json job;
  std::optional<Json> context_config_map;  // create before the Job when set
};

// Why a context document of `context_bytes` cannot ride with a run (it
// passes api::kContextDocumentBytesMax), naming the prompt's source and
// size; nullopt when it fits. Pure.
std::optional<std::string> context_too_large(std::size_t context_bytes,
                                             std::string_view prompt_source,
                                             std::size_t prompt_bytes);

// For a valid Agent (parse_agent_spec) and a context document within
// kContextDocumentBytesMax (callers check context_too_large first):
// both asserted.
JobPlan build_job(const StartingRun& run, const AgentSpec& agent, const std::string& context_text,
                  const JobConfig& config);

// Per-agent objects, created once (AlreadyExists is fine when this Agent
// controls the object), in this order: memory ConfigMap and Lease (what the
// Role names), then ServiceAccount, Role, RoleBinding (what grants rights;
// agent_grants.h). The operator stops at the first failure or object in the
// way, so no grant exists before both named objects are the Agent's own.
// After the RoleBinding the Lease is marked (agent_objects_made_patch):
// a marked Lease controlled by the Agent is proof that all five exist, so a
// restarted operator reads it from its Lease cache instead of asking the
// API server about five objects per Agent (at 10,000 agents, 100,000
// requests: over an hour of the default 20 QPS).
std::vector<std::pair<std::string, Json>> build_agent_objects(const AgentSpec& agent,
                                                              const JobConfig& config);

// On the agent's Lease: every per-agent object was made.
inline constexpr const char* kAnnotationAgentObjectsMade = "heartbeat.dev/agent-objects";
inline constexpr const char* kAgentObjectsMadeValue = "made";

// The merge patch that marks the Lease (one write per Agent, once).
Json agent_objects_made_patch();

// Whether `lease` (the agent's Lease as cached; null when not) shows that
// every per-agent object of the Agent with `agent_uid` was made: controlled
// by that Agent and marked. The runner may rewrite its Lease, including the
// mark; that only makes this operator make (or check) the objects again.
bool agent_objects_made(const Json* lease, std::string_view agent_uid);

// ownerReference (controller) to an object.
Json controller_ref(const AgentSpec& agent);
Json controller_ref(const StartingRun& run);

}  // namespace hb::controllers
