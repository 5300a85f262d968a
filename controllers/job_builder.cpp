#include "controllers/job_builder.h"

#include <algorithm>
#include <stdexcept>

#include "api/trace_context.h"
#include "api/utf8.h"
#include "controllers/agent_grants.h"
#include "controllers/cache_projection.h"
#include "controllers/names.h"
#include "controllers/pod_settings.h"
#include "controllers/run_view.h"
#include "controllers/schedule/spend.h"
#include "controllers/schedule/utc_time.h"

namespace hb::controllers {

namespace {

using schedule::format_rfc3339;

const Json& spec_of(const Json& object) {
  static const Json kEmpty = Json::object();
  const Json* spec = find_path(object, "spec");
  return spec != nullptr && spec->is_object() ? *spec : kEmpty;
}

Json labels_for(const Json& agent, const std::string& run_name) {
  Json labels = {{kLabelAgent, label_safe_name(string_at(agent, "metadata/name"))},
                 {kLabelManagedBy, kManagedByValue}};
  if (!run_name.empty()) labels[kLabelRun] = label_safe_name(run_name);
  return labels;
}

Json env_var(const std::string& name, const std::string& value) {
  return {{"name", name}, {"value", value}};
}

constexpr const char* kEnvOtelEndpoint = "OTEL_EXPORTER_OTLP_ENDPOINT";
constexpr const char* kEnvOtelHeaders = "OTEL_EXPORTER_OTLP_HEADERS";
constexpr const char* kOtelHeadersSecretKey = "headers";

bool reserved_env(const std::string& name) {
  return name.rfind(api::kEnvReservedPrefix, 0) == 0;
}

}  // namespace

Json controller_ref(const Json& owner) {
  return {{"apiVersion", string_at(owner, "apiVersion")},
          {"kind", string_at(owner, "kind")},
          {"name", string_at(owner, "metadata/name")},
          {"uid", string_at(owner, "metadata/uid")},
          {"controller", true}};
}

namespace {

api::ModelConfig model_config(const Json& spec) {
  api::ModelConfig model;
  const std::string provider = string_at(spec, "model/provider");
  auto parsed = api::parse_provider(provider);
  // The Agent's spec is checked before any run starts (agent_spec.h).
  if (!parsed) throw std::invalid_argument("unknown model provider \"" + provider + "\"");
  model.provider = *parsed;
  model.model = string_at(spec, "model/model");
  model.base_url = string_at(spec, "model/baseURL");
  if (auto tokens = int_at(spec, "model/maxTokens")) model.max_tokens = static_cast<int>(*tokens);
  model.pricing.input_cents_per_million_tokens =
      number_at(spec, "model/pricing/inputCentsPerMillionTokens").value_or(0);
  model.pricing.output_cents_per_million_tokens =
      number_at(spec, "model/pricing/outputCentsPerMillionTokens").value_or(0);
  return model;
}

std::vector<api::MemoryBlock> memory_blocks(const Json& spec) {
  std::vector<api::MemoryBlock> blocks;
  const Json* b = find_path(spec, "memory/blocks");
  if (b == nullptr || !b->is_array()) return blocks;
  for (const Json& block : *b) {
    blocks.push_back(
        {string_at(block, "label"), string_at(block, "value"),
         static_cast<int>(int_at(block, "limit").value_or(api::kCoreMemoryBlockLimitDefault))});
  }
  return blocks;
}

api::Budget budget(const Json& agent, const Json& spec, TimePoint now) {
  api::Budget out;
  out.per_run_cents = number_at(spec, "budget/perRunCents");
  if (auto tokens = int_at(spec, "budget/perRunTokens"); tokens && *tokens > 0) {
    out.per_run_tokens = *tokens;
  }
  if (auto monthly = int_at(spec, "budget/monthlyCents"); monthly && *monthly > 0) {
    const Json* status = find_path(agent, "status");
    double spent = 0;
    if (status != nullptr && string_at(*status, "spend/period") == schedule::spend_period(now)) {
      spent = number_at(*status, "spend/cents").value_or(0);
    }
    out.month_remaining_cents = std::max(0.0, static_cast<double>(*monthly) - spent);
  }
  return out;
}

// The newest `context_runs` finished runs other than `current_run`, newest first.
std::vector<const Json*> newest_finished(const std::vector<const Json*>& runs,
                                         const std::string& current_run, int64_t context_runs) {
  std::vector<std::pair<TimePoint, const Json*>> finished;
  for (const Json* r : runs) {
    if (r == nullptr || string_at(*r, "metadata/name") == current_run) continue;
    if (auto at = time_at(*r, "status/finishedAt")) finished.emplace_back(*at, r);
  }
  // Ranked as the cache's window ranks them, so a run the context shows has its output cached.
  std::sort(finished.begin(), finished.end(), [](const auto& a, const auto& b) {
    return finished_after(a.first, string_view_at(*a.second, "metadata/name"), b.first,
                          string_view_at(*b.second, "metadata/name"));
  });
  if (static_cast<int64_t>(finished.size()) > context_runs) {
    finished.resize(static_cast<std::size_t>(std::max<int64_t>(0, context_runs)));
  }
  std::vector<const Json*> out;
  for (const auto& [at, r] : finished) out.push_back(r);
  return out;
}

}  // namespace

int64_t context_runs_of(const Json& agent) {
  return int_at(agent, "spec/heartbeat/contextRuns").value_or(kContextRunsDefault);
}

std::vector<std::string> context_runs_to_read(const std::vector<const Json*>& runs,
                                              const std::string& current_run,
                                              int64_t context_runs) {
  std::vector<std::string> out;
  for (const Json* r : newest_finished(runs, current_run, context_runs)) {
    if (output_dropped(*r)) out.push_back(string_at(*r, "metadata/name"));
  }
  return out;
}

std::vector<api::RecentRun> recent_runs_oldest_first(const std::vector<const Json*>& runs,
                                                     const std::string& current_run,
                                                     int64_t context_runs) {
  std::vector<const Json*> shown = newest_finished(runs, current_run, context_runs);
  std::reverse(shown.begin(), shown.end());  // in the order they finished
  std::vector<api::RecentRun> out;
  for (const Json* r : shown) {
    out.push_back({string_at(*r, "metadata/name"), string_at(*r, "status/finishedAt"),
                   string_at(*r, "status/phase"), string_at(*r, "status/stopReason"),
                   std::string(api::utf8_prefix(string_view_at(*r, "status/output"),
                                                api::kRecentRunOutputBytesMax))});
  }
  return out;
}

api::ContextDocument context_document(const ContextInput& in, const JobConfig& config,
                                      const std::optional<Pricing>& pricing,
                                      std::optional<int64_t> per_run_tokens) {
  const Json& agent = *in.agent;
  const Json& run = *in.run;
  const Json& spec = spec_of(agent);
  api::ContextDocument doc;
  doc.agent_name = string_at(agent, "metadata/name");
  doc.agent_namespace = string_at(agent, "metadata/namespace");
  const std::string type = string_at(spec, "type", "memgpt_agent");
  auto agent_type = api::parse_agent_type(type);
  if (!agent_type) throw std::invalid_argument("unknown agent type \"" + type + "\"");
  doc.agent_type = *agent_type;
  doc.model = model_config(spec);
  if (pricing) {
    doc.model.pricing.input_cents_per_million_tokens = pricing->input_cents_per_million_tokens;
    doc.model.pricing.output_cents_per_million_tokens = pricing->output_cents_per_million_tokens;
    doc.model.pricing.cached_input_cents_per_million_tokens = cached_input_price(*pricing);
    doc.model.pricing.cache_write_input_cents_per_million_tokens =
        cache_write_input_price(*pricing);
  }
  doc.persona = string_at(spec, "persona");
  doc.memory_blocks = memory_blocks(spec);
  doc.memory_config_map = memory_config_map_name(doc.agent_name);
  doc.heartbeat_prompt = in.heartbeat_prompt;
  if (!string_at(spec, "memory/archival/persistentVolumeClaimName").empty()) {
    doc.archival_path = std::string(kArchivalMountDir) + "/" + kArchivalFile;
    // The whole transcript goes there too; those of runs no longer kept are deleted.
    doc.transcript_dir = std::string(kArchivalMountDir) + "/" + api::kTranscriptDirName;
    for (const Json* finished : in.recent_runs) {
      if (doc.transcript_keep.size() == api::kTranscriptKeepMax) break;
      doc.transcript_keep.push_back(string_at(*finished, "metadata/name"));
    }
  }
  doc.budget = budget(agent, spec, in.now);
  if (in.budget_left_cents) {
    doc.budget.month_remaining_cents =
        std::min(doc.budget.month_remaining_cents.value_or(*in.budget_left_cents),
                 std::max(0.0, *in.budget_left_cents));
  }
  if (per_run_tokens) doc.budget.per_run_tokens = *per_run_tokens;
  doc.recent_runs = recent_runs_oldest_first(in.recent_runs, string_at(run, "metadata/name"),
                                             context_runs_of(agent));
  const int64_t timeout =
      int_at(spec, "runtime/timeoutSeconds").value_or(kRuntimeTimeoutSecondsDefault);
  doc.run.name = string_at(run, "metadata/name");
  doc.run.uid = string_at(run, "metadata/uid");
  doc.run.invocation_source = string_at(run, "spec/invocationSource", "manual");
  doc.run.trigger_detail = string_at(run, "spec/triggerDetail");
  doc.run.metadata = api::usable_run_metadata(find_path(run, "spec/metadata"));
  doc.run.scheduled_time = time_at(run, "spec/scheduledTime");
  // Whole seconds, as Kubernetes times are.
  doc.run.deadline =
      std::chrono::floor<std::chrono::seconds>(in.now) + std::chrono::seconds(timeout);
  const std::chrono::seconds stall_window = std::max(config.stall_window, api::kRunStallWindowMin);
  doc.lease = api::LeaseConfig{lease_name_for_agent(doc.agent_name), stall_window,
                               std::max<std::chrono::seconds>(1s, stall_window / 5)};
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
  Json m = {{"name", volume}, {"mountPath", path}};
  if (read_only) m["readOnly"] = true;
  return m;
}

Json empty_dir(const char* name, const std::string& size_limit) {
  return {{"name", name}, {"emptyDir", {{"sizeLimit", size_limit}}}};
}

std::string tools_socket_path() {
  return std::string(api::kToolsSocketDir) + "/" + api::kToolsSocketFile;
}

// The ServiceAccount token, the API server's CA and the namespace, as the
// kubelet's automount would give them, but projected into the runner alone.
Json service_account_volume() {
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

// The runner's environment: the user's first (never HEARTBEAT_*), then the run's identity.
bool has_env(const Json& env, const std::string& name) {
  return std::any_of(env.begin(), env.end(),
                     [&](const Json& e) { return string_at(e, "name") == name; });
}

// The run's trace context (api/trace_context.h) and the operator's OTLP
// settings, unless the Agent set the same variables.
void add_otel_env(Json& env, const Json& run, const JobConfig& config) {
  const std::optional<api::TraceParent> trace =
      api::run_trace_parent(string_at(run, "metadata/uid"));
  if (trace && !has_env(env, api::kEnvTraceParent)) {
    env.push_back(env_var(api::kEnvTraceParent,
                          api::format_traceparent(trace->trace_id, trace->parent_span_id)));
  }
  if (!config.semconv_opt_in.empty() && !has_env(env, api::kEnvSemconvOptIn)) {
    env.push_back(env_var(api::kEnvSemconvOptIn, config.semconv_opt_in));
  }
  if (config.otel_endpoint.empty()) return;
  if (!has_env(env, kEnvOtelEndpoint)) {
    env.push_back(env_var(kEnvOtelEndpoint, config.otel_endpoint));
  }
  if (!config.otel_headers_secret.empty() && !has_env(env, kEnvOtelHeaders)) {
    env.push_back({{"name", kEnvOtelHeaders},
                   {"valueFrom",
                    {{"secretKeyRef",
                      {{"name", config.otel_headers_secret},
                       {"key", kOtelHeadersSecretKey},
                       {"optional", true}}}}}});
  }
}

Json runner_env(const Json& run, const Json& spec, const std::string& agent_name,
                const JobConfig& config, bool builtin) {
  Json env = Json::array();
  if (const Json* user = find_path(spec, "runtime/env"); user != nullptr && user->is_array()) {
    for (const Json& e : *user) {
      if (!reserved_env(string_at(e, "name"))) env.push_back(e);
    }
  }
  env.push_back(env_var(api::kEnvRunName, string_at(run, "metadata/name")));
  env.push_back(env_var(api::kEnvRunUid, string_at(run, "metadata/uid")));
  env.push_back(env_var(api::kEnvAgentName, agent_name));
  env.push_back(env_var(api::kEnvNamespace, string_at(run, "metadata/namespace")));
  env.push_back(
      env_var(api::kEnvInvocationSource, string_at(run, "spec/invocationSource", "manual")));
  env.push_back(env_var(api::kEnvContextPath, std::string(kContextMountDir) + "/" + kContextKey));
  env.push_back(env_var(api::kEnvTerminationPath, kTerminationPath));
  if (builtin) env.push_back(env_var(api::kEnvToolsSocket, tools_socket_path()));
  add_otel_env(env, run, config);
  if (find_path(spec, "model/apiKeySecretRef") != nullptr) {
    env.push_back({{"name", api::kEnvApiKey},
                   {"valueFrom",
                    {{"secretKeyRef",
                      {{"name", string_at(spec, "model/apiKeySecretRef/name")},
                       {"key", string_at(spec, "model/apiKeySecretRef/key")}}}}}});
  }
  return env;
}

Json runner_command(const Json& spec, const JobConfig& config, bool builtin) {
  if (const Json* c = find_path(spec, "runtime/command");
      c != nullptr && c->is_array() && (!builtin || !c->empty())) {
    return *c;
  }
  Json command = Json::array();
  for (const std::string& part : config.runner_command) command.push_back(part);
  return command;
}

std::string runner_image(const Json& spec, const JobConfig& config) {
  std::string image = string_at(spec, "runtime/image");
  return image.empty() ? config.default_image : image;
}

// The trusted container: the key, the token, the context, the result file.
Json runner_container(const Json& run, const Json& spec, const std::string& agent_name,
                      const JobConfig& config, bool builtin) {
  Json mounts =
      Json::array({mount(kContextVolume, kContextMountDir, true), mount(kTmpVolume, "/tmp"),
                   mount(api::kServiceAccountVolume, api::kServiceAccountMountDir, true)});
  if (builtin) mounts.push_back(mount(api::kToolsSocketVolume, api::kToolsSocketDir));
  // The archival claim: read-write (the runner's SQLite file), group-owned by
  // fsGroup so the non-root runner can write it.
  if (!string_at(spec, "memory/archival/persistentVolumeClaimName").empty()) {
    mounts.push_back(mount(kArchivalVolume, kArchivalMountDir));
  }
  Json container = {{"name", api::kRunnerContainerName},
                    {"image", runner_image(spec, config)},
                    {"imagePullPolicy", config.image_pull_policy},
                    {"command", runner_command(spec, config, builtin)},
                    {"env", runner_env(run, spec, agent_name, config, builtin)},
                    {"terminationMessagePath", kTerminationPath},
                    // Never the log tail: a runner killed before its result would
                    // have its log (model-chosen text) taken as the result.
                    {"terminationMessagePolicy", "File"},
                    {"securityContext", kRestrictedSecurityContext},
                    {"volumeMounts", std::move(mounts)}};
  if (const Json* resources = find_path(spec, "runtime/resources")) {
    container["resources"] = *resources;
  } else if (!config.runner_resources.empty()) {
    container["resources"] = config.runner_resources;
  }
  return container;
}

// The untrusted container: every agent-chosen command runs here, as its own
// user, with only the socket, a workspace and a tmp; no key, no token.
Json tools_container(const Json& spec, const JobConfig& config) {
  std::string image = string_at(spec, "runtime/tools/image");
  if (image.empty())
    image = config.tools_image.empty() ? runner_image(spec, config) : config.tools_image;
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
  if (const Json* resources = find_path(spec, "runtime/tools/resources")) {
    container["resources"] = *resources;
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
  return {{"name", kContextVolume},
          {"configMap",
           {{"name", cm_name},
            {"items", Json::array({{{"key", kContextKey}, {"path", kContextKey}}})}}}};
}

Json pod_volumes(Json context_volume, const Json& spec, bool builtin) {
  Json volumes = Json::array(
      {std::move(context_volume), empty_dir(kTmpVolume, kTmpSizeLimit), service_account_volume()});
  if (builtin) {
    volumes.push_back(empty_dir(api::kToolsSocketVolume, kToolsSocketSizeLimit));
    volumes.push_back(empty_dir(api::kToolsWorkspaceVolume, kWorkspaceSizeLimitDefault));
    volumes.push_back(empty_dir(api::kToolsTmpVolume, kTmpSizeLimit));
  }
  const std::string claim = string_at(spec, "memory/archival/persistentVolumeClaimName");
  if (!claim.empty()) {
    volumes.push_back(
        {{"name", kArchivalVolume}, {"persistentVolumeClaim", {{"claimName", claim}}}});
  }
  return volumes;
}

}  // namespace

std::optional<std::string> context_too_large(std::size_t context_bytes,
                                             std::string_view prompt_source,
                                             std::size_t prompt_bytes) {
  if (context_bytes <= api::kContextDocumentBytesMax) return std::nullopt;
  return "the run's context document would be " + std::to_string(context_bytes) +
         " bytes, more than the " + std::to_string(api::kContextDocumentBytesMax) +
         " a heartbeat Pod can carry; the prompt (" + std::string(prompt_source) + ") is " +
         std::to_string(prompt_bytes) + " bytes: shorten it (or the memory blocks, or contextRuns)";
}

JobPlan build_job(const Json& run, const Json& agent, const std::string& context_text,
                  const JobConfig& config) {
  if (context_text.size() > api::kContextDocumentBytesMax) {
    throw std::invalid_argument("the context document is " + std::to_string(context_text.size()) +
                                " bytes, more than the " +
                                std::to_string(api::kContextDocumentBytesMax) +
                                " a ConfigMap holds");
  }
  const Json& spec = spec_of(agent);
  const std::string run_name = string_at(run, "metadata/name");
  const std::string agent_name = string_at(agent, "metadata/name");
  const std::string ns = string_at(run, "metadata/namespace");
  const Json labels = labels_for(agent, run_name);
  const int64_t timeout =
      int_at(spec, "runtime/timeoutSeconds").value_or(kRuntimeTimeoutSecondsDefault);
  const int64_t grace = int_at(spec, "runtime/graceSeconds").value_or(kRuntimeGraceSecondsDefault);
  // Command mode runs the user's own program: no tools server to talk to.
  const bool builtin = string_at(spec, "runtime/mode") != "command";

  JobPlan plan;
  const bool use_annotation = config.context_transport == ContextTransport::kAnnotation &&
                              context_text.size() <= kContextAnnotationBytesMax;
  const Json names = {{kAnnotationAgentName, agent_name}, {kAnnotationRunName, run_name}};
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
                                     {"namespace", ns},
                                     {"labels", labels},
                                     {"ownerReferences", Json::array({controller_ref(run)})}}},
                                   {"data", {{kContextKey, context_text}}}};
    context_volume = config_map_context_volume(cm_name);
  }

  Json containers = Json::array({runner_container(run, spec, agent_name, config, builtin)});
  if (builtin) containers.push_back(tools_container(spec, config));
  Json pod_spec = {{"restartPolicy", "Never"},
                   {"serviceAccountName", service_account_name(agent_name)},
                   // The token is projected into the runner container only.
                   {"automountServiceAccountToken", false},
                   {"enableServiceLinks", false},
                   {"shareProcessNamespace", false},
                   {"terminationGracePeriodSeconds", grace},
                   {"securityContext",
                    {{"runAsNonRoot", true},
                     {"runAsUser", kRunnerUserId},
                     {"runAsGroup", kRunnerUserId},
                     {"fsGroup", kRunnerUserId},
                     {"seccompProfile", {{"type", "RuntimeDefault"}}}}},
                   {"containers", std::move(containers)},
                   {"volumes", pod_volumes(std::move(context_volume), spec, builtin)}};
  if (auto runtime_class = string_at(spec, "runtime/runtimeClassName"); !runtime_class.empty()) {
    pod_spec["runtimeClassName"] = runtime_class;
  }
  const Json* runtime = find_path(spec, "runtime");
  apply_pod_settings(
      effective_pod_settings(runtime != nullptr ? *runtime : Json::object(), config.pod_defaults),
      template_metadata, pod_spec);

  plan.job = {{"apiVersion", "batch/v1"},
              {"kind", "Job"},
              {"metadata",
               {{"name", job_name_for_run(run_name)},
                {"namespace", ns},
                {"labels", labels},
                {"annotations", names},
                {"ownerReferences", Json::array({controller_ref(run)})}}},
              {"spec",
               {{"backoffLimit", 0},
                {"activeDeadlineSeconds", timeout},
                {"template", {{"metadata", template_metadata}, {"spec", pod_spec}}}}}};
  return plan;
}

std::vector<std::pair<std::string, Json>> build_agent_objects(const Json& agent,
                                                              const JobConfig& config) {
  const std::string name = string_at(agent, "metadata/name");
  const std::string ns = string_at(agent, "metadata/namespace");
  const std::string sa = service_account_name(name);
  const std::string lease = lease_name_for_agent(name);
  const std::string memory = memory_config_map_name(name);
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
  const std::string blocks = api::encode_memory_blocks(memory_blocks(spec_of(agent)));
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
