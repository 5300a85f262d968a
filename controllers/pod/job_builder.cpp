#include "controllers/pod/job_builder.h"

#include <algorithm>
#include <stdexcept>

#include "api/hb_assert.h"
#include "api/trace_context.h"
#include "controllers/model/agent_grants.h"
#include "controllers/model/names.h"
#include "controllers/model/pod_settings.h"
#include "controllers/model/run_view.h"
#include "controllers/run/earlier_runs.h"
#include "controllers/run/run_after_job.h"
#include "controllers/run/run_record.h"
#include "controllers/schedule/spend.h"
#include "controllers/schedule/utc_time.h"

namespace hb::controllers {

namespace {

using schedule::format_rfc3339;

Json labels_for(const AgentSpec& agent, const std::string& run_name) {
  std::string agent_label = label_safe_name(agent.name);
  HB_ASSERT_MSG(agent_label.size() <= kLabelValueCharsMax,
                "the agent label is a valid label value");
  Json labels = {{kLabelAgent, std::move(agent_label)}, {kLabelManagedBy, kManagedByValue}};
  if (!run_name.empty()) {
    std::string run_label = label_safe_name(run_name);
    HB_ASSERT_MSG(run_label.size() <= kLabelValueCharsMax, "the run label is a valid label value");
    labels[kLabelRun] = std::move(run_label);
  }
  return labels;
}

Json env_var(const std::string& name, const std::string& value) {
  HB_ASSERT_MSG(!name.empty(), "each variable the operator adds is named by a constant");
  return {{"name", name}, {"value", value}};
}

constexpr const char* kEnvOtelEndpoint = "OTEL_EXPORTER_OTLP_ENDPOINT";
constexpr const char* kEnvOtelHeaders = "OTEL_EXPORTER_OTLP_HEADERS";
constexpr const char* kOtelHeadersSecretKey = "headers";

// The tools server's socket path fits a Unix socket address (sun_path, 108 bytes).
static_assert(std::char_traits<char>::length(api::kToolsSocketDir) + 1 +
                      std::char_traits<char>::length(api::kToolsSocketFile) <
                  108,
              "the tools socket path fits sun_path");

bool reserved_env(const std::string& name) {
  return name.rfind(api::kEnvReservedPrefix, 0) == 0;
}

}  // namespace

namespace {

Json owner_ref(std::string api_version, std::string kind, std::string name, std::string uid) {
  return {{"apiVersion", std::move(api_version)},
          {"kind", std::move(kind)},
          {"name", std::move(name)},
          {"uid", std::move(uid)},
          {"controller", true}};
}

}  // namespace

Json controller_ref(const AgentSpec& agent) {
  return owner_ref(agent.api_version, agent.kind, agent.name, agent.uid);
}

Json controller_ref(const StartingRun& run) {
  return owner_ref(run.api_version, run.kind, run.identity.name, run.identity.uid);
}

namespace {

// The model section; the price only the input and output parts (what the
// caller's effective price overrides).
api::ModelConfig model_config(const AgentSpec& agent) {
  api::ModelConfig model;
  auto parsed = api::parse_provider(agent.provider);
  // The Agent's spec is checked before any run starts (agent_spec.h).
  HB_ASSERT_MSG(parsed.has_value(), "a run starts only for a valid Agent: its provider is known");
  model.provider = *parsed;
  model.model = agent.model;
  model.base_url = agent.base_url;
  model.max_tokens = static_cast<int>(agent.max_tokens);
  model.pricing.input_cents_per_million_tokens = agent.pricing.input_cents_per_million_tokens;
  model.pricing.output_cents_per_million_tokens = agent.pricing.output_cents_per_million_tokens;
  return model;
}

api::Budget budget(const AgentSpec& agent, const Spend& spend, TimePoint now) {
  api::Budget out;
  out.per_run_cents = agent.per_run_cents;
  if (agent.per_run_tokens > 0) out.per_run_tokens = agent.per_run_tokens;
  if (agent.monthly_budget_cents > 0) {
    // Spend recorded for an earlier month counts as none.
    const double spent = spend.period == schedule::spend_period(now) ? spend.cents : 0;
    out.month_remaining_cents =
        std::max(0.0, static_cast<double>(agent.monthly_budget_cents) - spent);
  }
  HB_ASSERT_MSG(!out.month_remaining_cents || !(*out.month_remaining_cents < 0),
                "the month's budget left to a run is never negative");
  return out;
}

}  // namespace

std::vector<std::string> context_runs_to_read(const std::vector<EarlierRun>& runs,
                                              const std::string& current_run,
                                              int64_t context_runs) {
  std::vector<std::string> out;
  for (const EarlierRun* r : newest_finished(runs, current_run, context_runs)) {
    if (r->output_dropped) out.push_back(r->name);
  }
  HB_ASSERT_MSG(static_cast<int64_t>(out.size()) <= std::max<int64_t>(0, context_runs),
                "at most contextRuns earlier runs are read for the context");
  return out;
}

std::vector<api::RecentRun> recent_runs_oldest_first(const std::vector<EarlierRun>& runs,
                                                     const std::string& current_run,
                                                     int64_t context_runs) {
  std::vector<const EarlierRun*> shown = newest_finished(runs, current_run, context_runs);
  std::reverse(shown.begin(), shown.end());  // in the order they finished
  std::vector<api::RecentRun> out;
  for (const EarlierRun* r : shown) {
    out.push_back({r->name, r->finished_at_text, r->phase, r->stop_reason, r->output});
  }
  HB_ASSERT_MSG(static_cast<int64_t>(out.size()) <= std::max<int64_t>(0, context_runs),
                "the context shows at most contextRuns earlier runs");
  return out;
}

namespace {

// With an archival claim the whole transcript goes there too; those of runs
// no longer kept are deleted.
void add_archival(api::ContextDocument& doc, const std::vector<EarlierRun>& runs) {
  HB_ASSERT_MSG(doc.transcript_keep.empty(), "the transcripts kept are listed once");
  doc.archival_path = std::string(kArchivalMountDir) + "/" + kArchivalFile;
  doc.transcript_dir = std::string(kArchivalMountDir) + "/" + api::kTranscriptDirName;
  for (const EarlierRun& run : runs) {
    if (doc.transcript_keep.size() == api::kTranscriptKeepMax) break;
    doc.transcript_keep.push_back(run.name);
  }
}

void apply_pricing(api::ModelConfig& model, const Pricing& pricing) {
  model.pricing.input_cents_per_million_tokens = pricing.input_cents_per_million_tokens;
  model.pricing.output_cents_per_million_tokens = pricing.output_cents_per_million_tokens;
  model.pricing.cached_input_cents_per_million_tokens = cached_input_price(pricing);
  model.pricing.cache_write_input_cents_per_million_tokens = cache_write_input_price(pricing);
  HB_ASSERT_MSG(!pricing.cached_input_cents_per_million_tokens ||
                    model.pricing.cached_input_cents_per_million_tokens ==
                        *pricing.cached_input_cents_per_million_tokens,
                "an effective cache-read price is the one the runner is told");
}

// The Agent's budget, narrowed by what is held ahead for the run.
api::Budget run_budget(const ContextInput& in, std::optional<int64_t> per_run_tokens) {
  api::Budget out = budget(*in.agent, in.spend, in.now);
  if (in.budget_left_cents && in.budget_left_is_daily) {
    out.day_remaining_cents = std::max(0.0, *in.budget_left_cents);
  } else if (in.budget_left_cents) {
    out.month_remaining_cents = std::min(out.month_remaining_cents.value_or(*in.budget_left_cents),
                                         std::max(0.0, *in.budget_left_cents));
  }
  if (per_run_tokens) out.per_run_tokens = *per_run_tokens;
  HB_ASSERT_MSG(!out.day_remaining_cents || !(*out.day_remaining_cents < 0),
                "the day's budget left to a run is never negative");
  HB_ASSERT_MSG(!out.month_remaining_cents || !(*out.month_remaining_cents < 0),
                "the month's budget held ahead for a run is never negative");
  return out;
}

}  // namespace

api::ContextDocument context_document(const ContextInput& in, const JobConfig& config,
                                      const std::optional<Pricing>& pricing,
                                      std::optional<int64_t> per_run_tokens) {
  HB_ASSERT(in.agent != nullptr && in.run != nullptr);
  const AgentSpec& agent = *in.agent;
  api::ContextDocument doc;
  doc.agent_name = agent.name;
  doc.agent_namespace = agent.ns;
  doc.agent_type = agent.type;
  doc.model = model_config(agent);
  if (pricing) apply_pricing(doc.model, *pricing);
  doc.persona = agent.persona;
  doc.memory_blocks = agent.memory_blocks;
  doc.memory_config_map = memory_config_map_name(doc.agent_name);
  doc.heartbeat_prompt = in.heartbeat_prompt;
  if (!agent.archival_claim.empty()) add_archival(doc, in.recent_runs);
  doc.budget = run_budget(in, per_run_tokens);
  doc.recent_runs =
      recent_runs_oldest_first(in.recent_runs, in.run->identity.name, agent.context_runs);
  doc.run = in.run->identity;
  // Whole seconds, as Kubernetes times are.
  doc.run.deadline = std::chrono::floor<std::chrono::seconds>(in.now) +
                     std::chrono::seconds(agent.timeout_seconds);
  const std::chrono::seconds stall_window = std::max(config.stall_window, api::kRunStallWindowMin);
  doc.lease = api::LeaseConfig{lease_name_for_agent(doc.agent_name), stall_window,
                               std::max<std::chrono::seconds>(1s, stall_window / 5)};
  HB_ASSERT_MSG(doc.lease->renew_interval < doc.lease->stall_window,
                "the runner renews its Lease before the stall window ends");
  HB_ASSERT_MSG(doc.recent_runs.size() <= static_cast<std::size_t>(std::max(agent.context_runs, 0)),
                "the context carries at most contextRuns earlier runs");
  return doc;
}

Json render_context(const ContextInput& in, const JobConfig& config,
                    const std::optional<Pricing>& pricing, std::optional<int64_t> per_run_tokens) {
  return api::render_context_document(context_document(in, config, pricing, per_run_tokens));
}

namespace {

const Json kRestrictedSecurityContext = {{"allowPrivilegeEscalation", false},
                                         {"privileged", false},
                                         {"readOnlyRootFilesystem", true},
                                         {"runAsNonRoot", true},
                                         {"capabilities", {{"drop", Json::array({"ALL"})}}}};

Json mount(const char* volume, const std::string& path, bool read_only = false) {
  HB_ASSERT_MSG(volume != nullptr && *volume != '\0' && !path.empty() && path.front() == '/',
                "a named volume is mounted at an absolute path");
  Json m = {{"name", volume}, {"mountPath", path}};
  if (read_only) m["readOnly"] = true;
  return m;
}

Json empty_dir(const char* name, const std::string& size_limit) {
  HB_ASSERT_MSG(name != nullptr && *name != '\0' && !size_limit.empty(),
                "a scratch volume is named and bounded");
  return {{"name", name}, {"emptyDir", {{"sizeLimit", size_limit}}}};
}

std::string tools_socket_path() {
  return std::string(api::kToolsSocketDir) + "/" + api::kToolsSocketFile;
}

// The ServiceAccount token, the API server's CA and the namespace, as the
// kubelet's automount would give them, but projected into the runner alone.
Json service_account_volume() {
  static_assert(api::kServiceAccountTokenExpirationSeconds >= 600,
                "the API server refuses a projected token that expires in under 10 minutes");
  return {
      {"name", api::kServiceAccountVolume},
      {"projected",
       {{"defaultMode", 0444},
        {"sources",
         Json::array(
             {{{"serviceAccountToken",
                {{"path", "token"},
                 {"expirationSeconds", api::kServiceAccountTokenExpirationSeconds}}}},
              {{"configMap",
                {{"name", api::kRootCaConfigMap},
                 {"items", Json::array({{{"key", "ca.crt"}, {"path", "ca.crt"}}})}}}},
              {{"downwardAPI",
                {{"items",
                  Json::array({{{"path", "namespace"},
                                {"fieldRef", {{"fieldPath", "metadata.namespace"}}}}})}}}}})}}}};
}

// Whether the Agent's spec.runtime.env sets `name` (one the operator would
// add; none of those is reserved, so the Job keeps the Agent's).
bool agent_sets_env(const AgentSpec& agent, const std::string& name) {
  return !reserved_env(name) && std::any_of(agent.runtime_env.begin(), agent.runtime_env.end(),
                                            [&](const EnvEntry& e) { return e.name == name; });
}

// The run's trace context (api/trace_context.h) and the operator's OTLP
// settings, unless the Agent set the same variables.
void add_otel_env(Json& env, const StartingRun& run, const AgentSpec& agent,
                  const JobConfig& config) {
  HB_ASSERT_MSG(env.is_array(), "variables join the runner's list of them");
  const std::optional<api::TraceParent> trace = api::run_trace_parent(run.trace_uid);
  if (trace && !agent_sets_env(agent, api::kEnvTraceParent)) {
    env.push_back(env_var(api::kEnvTraceParent,
                          api::format_traceparent(trace->trace_id, trace->parent_span_id)));
  }
  if (!config.semconv_opt_in.empty() && !agent_sets_env(agent, api::kEnvSemconvOptIn)) {
    env.push_back(env_var(api::kEnvSemconvOptIn, config.semconv_opt_in));
  }
  if (config.otel_endpoint.empty()) return;
  if (!agent_sets_env(agent, kEnvOtelEndpoint)) {
    env.push_back(env_var(kEnvOtelEndpoint, config.otel_endpoint));
  }
  if (!config.otel_headers_secret.empty() && !agent_sets_env(agent, kEnvOtelHeaders)) {
    env.push_back({{"name", kEnvOtelHeaders},
                   {"valueFrom",
                    {{"secretKeyRef",
                      {{"name", config.otel_headers_secret},
                       {"key", kOtelHeadersSecretKey},
                       {"optional", true}}}}}});
  }
}

// The runner's environment: the user's first (never HEARTBEAT_*), then the run's identity.
Json runner_env(const StartingRun& run, const AgentSpec& agent, const JobConfig& config,
                bool builtin) {
  Json env = Json::array();
  for (const EnvEntry& e : agent.runtime_env) {
    if (!reserved_env(e.name)) env.push_back(e.entry);
  }
  env.push_back(env_var(api::kEnvRunName, run.identity.name));
  if (!run.identity.uid.empty()) env.push_back(env_var(api::kEnvRunUid, run.identity.uid));
  env.push_back(env_var(api::kEnvAgentName, agent.name));
  env.push_back(env_var(api::kEnvNamespace, run.ns));
  env.push_back(env_var(api::kEnvInvocationSource, run.identity.invocation_source));
  env.push_back(env_var(api::kEnvContextPath, std::string(kContextMountDir) + "/" + kContextKey));
  env.push_back(env_var(api::kEnvTerminationPath, kTerminationPath));
  if (builtin) env.push_back(env_var(api::kEnvToolsSocket, tools_socket_path()));
  add_otel_env(env, run, agent, config);
  if (agent.api_key) {
    env.push_back(
        {{"name", api::kEnvApiKey},
         {"valueFrom",
          {{"secretKeyRef", {{"name", agent.api_key->name}, {"key", agent.api_key->key}}}}}});
  }
  return env;
}

Json runner_command(const AgentSpec& agent, const JobConfig& config, bool builtin) {
  const Json& c = agent.runtime_command;
  if (c.is_array() && (!builtin || !c.empty())) return c;
  Json command = Json::array();
  for (const std::string& part : config.runner_command) command.push_back(part);
  return command;
}

const std::string& runner_image(const AgentSpec& agent, const JobConfig& config) {
  return agent.runtime_image.empty() ? config.default_image : agent.runtime_image;
}

// The trusted container: the key, the token, the context, the result file.
Json runner_container(const StartingRun& run, const AgentSpec& agent, const JobConfig& config,
                      bool builtin) {
  static_assert(kTerminationPath[0] == '/', "the kubelet reads the result at an absolute path");
  Json mounts =
      Json::array({mount(kContextVolume, kContextMountDir, true), mount(kTmpVolume, "/tmp"),
                   mount(api::kServiceAccountVolume, api::kServiceAccountMountDir, true)});
  if (builtin) mounts.push_back(mount(api::kToolsSocketVolume, api::kToolsSocketDir));
  // The archival claim: read-write (the runner's SQLite file), group-owned by
  // fsGroup so the non-root runner can write it.
  if (!agent.archival_claim.empty()) mounts.push_back(mount(kArchivalVolume, kArchivalMountDir));
  Json container = {{"name", api::kRunnerContainerName},
                    {"image", runner_image(agent, config)},
                    {"imagePullPolicy", config.image_pull_policy},
                    {"command", runner_command(agent, config, builtin)},
                    {"env", runner_env(run, agent, config, builtin)},
                    {"terminationMessagePath", kTerminationPath},
                    // Never the log tail: a runner killed before its result would
                    // have its log (model-chosen text) taken as the result.
                    {"terminationMessagePolicy", "File"},
                    {"securityContext", kRestrictedSecurityContext},
                    {"volumeMounts", std::move(mounts)}};
  if (agent.runtime_resources) {
    container["resources"] = *agent.runtime_resources;
  } else if (!config.runner_resources.empty()) {
    container["resources"] = config.runner_resources;
  }
  return container;
}

// The untrusted container: every agent-chosen command runs here, as its own
// user, with only the socket, a workspace and a tmp; no key, no token.
Json tools_container(const AgentSpec& agent, const JobConfig& config) {
  static_assert(api::kToolsUserId != 0 && api::kToolsUserId != kRunnerUserId,
                "agent-chosen commands run as a user of their own, never root, never the runner");
  std::string image = agent.tools_image;
  if (image.empty())
    image = config.tools_image.empty() ? runner_image(agent, config) : config.tools_image;
  Json security = kRestrictedSecurityContext;
  security["runAsUser"] = api::kToolsUserId;
  security["runAsGroup"] = api::kToolsUserId;
  Json container = {
      {"name", api::kToolsContainerName},
      {"image", image},
      {"imagePullPolicy", config.image_pull_policy},
      {"command", Json::array({api::kToolsServerPath, "--socket=" + tools_socket_path(),
                               std::string("--workdir=") + api::kToolsWorkspaceDir})},
      {"workingDir", api::kToolsWorkspaceDir},
      {"terminationMessagePolicy", "File"},
      {"securityContext", std::move(security)},
      {"volumeMounts", Json::array({mount(api::kToolsSocketVolume, api::kToolsSocketDir),
                                    mount(api::kToolsWorkspaceVolume, api::kToolsWorkspaceDir),
                                    mount(api::kToolsTmpVolume, "/tmp")})}};
  if (agent.tools_resources) {
    container["resources"] = *agent.tools_resources;
  } else if (!config.tools_resources.empty()) {
    container["resources"] = config.tools_resources;
  }
  return container;
}

Json annotation_context_volume() {
  return {{"name", kContextVolume},
          {"downwardAPI",
           {{"items", Json::array({{{"path", kContextKey},
                                    {"fieldRef",
                                     {{"fieldPath", std::string("metadata.annotations['") +
                                                        kAnnotationContext + "']"}}}}})}}}};
}

Json config_map_context_volume(const std::string& cm_name) {
  HB_ASSERT_MSG(!cm_name.empty(), "the context's ConfigMap is named for its run");
  return {{"name", kContextVolume},
          {"configMap",
           {{"name", cm_name},
            {"items", Json::array({{{"key", kContextKey}, {"path", kContextKey}}})}}}};
}

Json pod_volumes(Json context_volume, const AgentSpec& agent, bool builtin) {
  Json volumes = Json::array(
      {std::move(context_volume), empty_dir(kTmpVolume, kTmpSizeLimit), service_account_volume()});
  if (builtin) {
    volumes.push_back(empty_dir(api::kToolsSocketVolume, kToolsSocketSizeLimit));
    volumes.push_back(empty_dir(api::kToolsWorkspaceVolume, kWorkspaceSizeLimitDefault));
    volumes.push_back(empty_dir(api::kToolsTmpVolume, kTmpSizeLimit));
  }
  if (!agent.archival_claim.empty()) {
    volumes.push_back({{"name", kArchivalVolume},
                       {"persistentVolumeClaim", {{"claimName", agent.archival_claim}}}});
  }
  HB_ASSERT_MSG(volumes.front().is_object() && volumes.front().contains("name") &&
                    volumes.front()["name"] == kContextVolume,
                "the Pod's volumes start with the context's");
  return volumes;
}

}  // namespace

// An annotation-borne context and the Pod annotations an Agent may add fit
// the API server's 256 KiB for all annotations of an object together.
static_assert(kContextAnnotationBytesMax + kPodAnnotationsBytesMax < 256 * 1024);

std::optional<std::string> context_too_large(std::size_t context_bytes,
                                             std::string_view prompt_source,
                                             std::size_t prompt_bytes) {
  static_assert(kContextAnnotationBytesMax < api::kContextDocumentBytesMax,
                "a context small enough for the annotation is never refused as too large");
  if (context_bytes <= api::kContextDocumentBytesMax) return std::nullopt;
  return "the run's context document would be " + std::to_string(context_bytes) +
         " bytes, more than the " + std::to_string(api::kContextDocumentBytesMax) +
         " a heartbeat Pod can carry; the prompt (" + std::string(prompt_source) + ") is " +
         std::to_string(prompt_bytes) + " bytes: shorten it (or the memory blocks, or contextRuns)";
}

namespace {

// The Pod's spec; its volumes start with the context's.
Json pod_spec_for(const StartingRun& run, const AgentSpec& agent, const JobConfig& config,
                  Json context_volume) {
  static_assert(kRunnerUserId != 0, "runAsNonRoot: the kubelet refuses a Pod that runs as root");
  // Command mode runs the user's own program: no tools server to talk to.
  const bool builtin = agent.mode != RuntimeMode::kCommand;
  Json containers = Json::array({runner_container(run, agent, config, builtin)});
  if (builtin) containers.push_back(tools_container(agent, config));
  Json pod_spec = {{"restartPolicy", "Never"},
                   {"serviceAccountName", service_account_name(agent.name)},
                   // The token is projected into the runner container only.
                   {"automountServiceAccountToken", false},
                   {"enableServiceLinks", false},
                   {"shareProcessNamespace", false},
                   {"terminationGracePeriodSeconds", agent.grace_seconds},
                   {"securityContext",
                    {{"runAsNonRoot", true},
                     {"runAsUser", kRunnerUserId},
                     {"runAsGroup", kRunnerUserId},
                     {"fsGroup", kRunnerUserId},
                     {"seccompProfile", {{"type", "RuntimeDefault"}}}}},
                   {"containers", std::move(containers)},
                   {"volumes", pod_volumes(std::move(context_volume), agent, builtin)}};
  if (!agent.runtime_class_name.empty()) pod_spec["runtimeClassName"] = agent.runtime_class_name;
  return pod_spec;
}

}  // namespace

namespace {

// A Job made for a stored run is controlled by it; one made before its run
// carries the run to make and the Agent's uid instead (run_after_job.h),
// with no owner till the run is made.
Json job_metadata(const StartingRun& run, const AgentSpec& agent, const std::string& job_name,
                  const Json& labels, const Json& names) {
  Json metadata = {
      {"name", job_name}, {"namespace", run.ns}, {"labels", labels}, {"annotations", names}};
  if (!run.identity.uid.empty()) {
    metadata["ownerReferences"] = Json::array({controller_ref(run)});
    return metadata;
  }
  HB_ASSERT_MSG(!run.to_make.empty(), "a Job made before its run carries the run to make");
  metadata["annotations"][kAnnotationAgentUid] = agent.uid;
  metadata["annotations"][kAnnotationRunToMake] = run.to_make;
  return metadata;
}

}  // namespace

JobPlan build_job(const StartingRun& run, const AgentSpec& agent, const std::string& context_text,
                  const JobConfig& config) {
  HB_ASSERT_MSG(context_text.size() <= api::kContextDocumentBytesMax,
                "callers refuse a context document too large first (context_too_large)");
  const std::string& run_name = run.identity.name;
  HB_ASSERT_MSG(!run_name.empty(), "a Job is built for a named run");
  const Json labels = labels_for(agent, run_name);
  const std::string job_name = job_name_for_run(run_name);
  HB_ASSERT_MSG(job_name.size() <= kLabelValueCharsMax, "a Job's name is its Pods' job-name label");

  JobPlan plan;
  const bool use_annotation = config.context_transport == ContextTransport::kAnnotation &&
                              context_text.size() <= kContextAnnotationBytesMax;
  const Json names = {{kAnnotationAgentName, agent.name}, {kAnnotationRunName, run_name}};
  Json template_metadata = {{"labels", labels}, {"annotations", names}};
  Json context_volume;
  if (use_annotation) {
    template_metadata["annotations"][kAnnotationContext] = context_text;
    context_volume = annotation_context_volume();
  } else {
    const std::string cm_name = context_config_map_name(run_name);
    plan.context_config_map = Json{{"apiVersion", "v1"},
                                   {"kind", "ConfigMap"},
                                   {"metadata",
                                    {{"name", cm_name},
                                     {"namespace", run.ns},
                                     {"labels", labels},
                                     {"ownerReferences", Json::array({controller_ref(run)})}}},
                                   {"data", {{kContextKey, context_text}}}};
    context_volume = config_map_context_volume(cm_name);
  }
  HB_ASSERT_MSG(use_annotation != plan.context_config_map.has_value(),
                "the context rides in exactly one of an annotation and a ConfigMap");
  Json pod_spec = pod_spec_for(run, agent, config, std::move(context_volume));
  apply_pod_settings(effective_pod_settings(agent.runtime, config.pod_defaults), template_metadata,
                     pod_spec);

  plan.job = {{"apiVersion", "batch/v1"},
              {"kind", "Job"},
              {"metadata", job_metadata(run, agent, job_name, labels, names)},
              {"spec",
               {{"backoffLimit", 0},
                {"activeDeadlineSeconds", agent.timeout_seconds},
                {"template", {{"metadata", template_metadata}, {"spec", pod_spec}}}}}};
  return plan;
}

std::vector<std::pair<std::string, Json>> build_agent_objects(const AgentSpec& agent,
                                                              const JobConfig& config) {
  const std::string& name = agent.name;
  const std::string& ns = agent.ns;
  const std::string sa = service_account_name(name);
  const std::string lease = lease_name_for_agent(name);
  const std::string memory = memory_config_map_name(name);
  HB_ASSERT_MSG(sa != lease && lease != memory && sa != memory,
                "an agent's per-agent objects have names of their own");
  const Json labels = api::agent_object_labels(name);
  auto metadata = [&](const std::string& object_name) {
    return Json{{"name", object_name},
                {"namespace", ns},
                {"labels", labels},
                {"ownerReferences", Json::array({controller_ref(agent)})}};
  };
  // The runner patches its Lease (beats) and reads and replaces its memory
  // ConfigMap (runner/kube_adapters.cpp): nothing more is granted.
  const Json role_rules = Json::array({{{"apiGroups", Json::array({"coordination.k8s.io"})},
                                        {"resources", Json::array({kKindLeases})},
                                        {"resourceNames", Json::array({lease})},
                                        {"verbs", Json::array({"patch"})}},
                                       {{"apiGroups", Json::array({""})},
                                        {"resources", Json::array({kKindConfigMaps})},
                                        {"resourceNames", Json::array({memory})},
                                        {"verbs", Json::array({"get", "update"})}}});
  const std::string blocks = api::encode_memory_blocks(agent.memory_blocks);
  std::vector<std::pair<std::string, Json>> out;
  // What the Role names first (agent_grants.h: ownership before grants).
  out.emplace_back(kKindConfigMaps, Json{{"apiVersion", "v1"},
                                         {"kind", "ConfigMap"},
                                         {"metadata", metadata(memory)},
                                         {"data", {{kMemoryBlocksKey, blocks}}}});
  out.emplace_back(kKindLeases,
                   Json{{"apiVersion", "coordination.k8s.io/v1"},
                        {"kind", "Lease"},
                        {"metadata", metadata(lease)},
                        {"spec",
                         {{"leaseDurationSeconds",
                           std::max(config.stall_window, api::kRunStallWindowMin).count()}}}});
  out.emplace_back(
      kKindServiceAccounts,
      Json{{"apiVersion", "v1"}, {"kind", "ServiceAccount"}, {"metadata", metadata(sa)}});
  out.emplace_back(kKindRoles, Json{{"apiVersion", "rbac.authorization.k8s.io/v1"},
                                    {"kind", "Role"},
                                    {"metadata", metadata(sa)},
                                    {"rules", role_rules}});
  out.emplace_back(
      kKindRoleBindings,
      Json{{"apiVersion", "rbac.authorization.k8s.io/v1"},
           {"kind", "RoleBinding"},
           {"metadata", metadata(sa)},
           {"roleRef", {{"apiGroup", "rbac.authorization.k8s.io"}, {"kind", "Role"}, {"name", sa}}},
           {"subjects",
            Json::array({{{"kind", "ServiceAccount"}, {"name", sa}, {"namespace", ns}}})}});
  return out;
}

Json agent_objects_made_patch() {
  return {{"metadata", {{"annotations", {{kAnnotationAgentObjectsMade, kAgentObjectsMadeValue}}}}}};
}

bool agent_objects_made(const Json* lease, std::string_view agent_uid) {
  if (lease == nullptr || !controlled_by(*lease, agent_uid)) return false;
  return annotation_at(*lease, kAnnotationAgentObjectsMade) == kAgentObjectsMadeValue;
}

}  // namespace hb::controllers
