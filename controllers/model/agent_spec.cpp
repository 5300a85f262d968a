#include "controllers/model/agent_spec.h"

#include <algorithm>

#include "api/context_document.h"
#include "api/hb_assert.h"
#include "api/object_names.h"
#include "controllers/model/pod_settings.h"
#include "controllers/model/text_util.h"
#include "controllers/schedule/stable_hash.h"
#include "controllers/schedule/time_zone.h"

namespace hb::controllers {

std::string join_errors(const std::vector<std::string>& errors) {
  std::string out;
  for (const std::string& error : errors) {
    if (!out.empty()) out += "; ";
    out += error;
  }
  return out;
}

std::string SpecCheck::message() const {
  return join_errors(errors);
}

std::vector<std::string> spec_errors(const SpecCheck& parsed, const SpecEnvironment& env) {
  std::vector<std::string> errors = parsed.errors;
  if (!env.object_in_the_way.empty()) {
    errors.push_back(env.object_in_the_way +
                     " exists and is not owned by this Agent; the operator never adopts it: "
                     "delete or rename that object, or give the Agent another name");
  }
  HB_ASSERT_MSG(errors.size() == parsed.errors.size() + (env.object_in_the_way.empty() ? 0 : 1),
                "the environment adds at most one error to the spec's own");
  return errors;
}

SpecCheck check_agent_spec(const Json& agent, const SpecEnvironment& env) {
  SpecCheck check = parse_agent_spec(agent);
  check.errors = spec_errors(check, env);
  return check;
}

namespace {

// A spread or time zone on an agent with neither interval nor schedule
// would be silently ignored: say so instead.
void unscheduled_field_errors(std::string_view spread, std::string_view time_zone,
                              std::vector<std::string>& errors) {
  const std::string none = " applies to a heartbeat, and neither " +
                           std::string(schedule::kIntervalField) + " nor " +
                           std::string(schedule::kScheduleField) + " is set";
  if (!spread.empty() && spread != schedule::kSpreadNone) {
    errors.push_back(std::string(schedule::kSpreadField) + ":" + none);
  }
  if (!time_zone.empty()) errors.push_back(std::string(schedule::kTimeZoneField) + ":" + none);
}

// Every name the spec gives that the operator or the Pod looks up must be a
// name of its kind: one that is not would reach a URL or a reference (the
// CRD's patterns say the same at apply; this holds for objects stored
// before those patterns, or written around them).
void reference_name_errors(const AgentSpec& s, std::vector<std::string>& errors) {
  using api::NameRule;
  auto check = [&](std::string_view field, std::string_view value, NameRule rule) {
    if (auto problem = api::name_problem(field, value, rule)) errors.push_back(std::move(*problem));
  };
  if (s.api_key) {
    check("spec.model.apiKeySecretRef.name", s.api_key->name, NameRule::kDns1123Subdomain);
    check("spec.model.apiKeySecretRef.key", s.api_key->key, NameRule::kConfigKey);
  }
  if (s.prompt_from && !s.prompt_from->name.empty() && !s.prompt_from->key.empty()) {
    check("spec.heartbeat.promptFrom.configMapKeyRef.name", s.prompt_from->name,
          NameRule::kDns1123Subdomain);
    check("spec.heartbeat.promptFrom.configMapKeyRef.key", s.prompt_from->key,
          NameRule::kConfigKey);
  }
  if (!s.archival_claim.empty()) {
    check("spec.memory.archival.persistentVolumeClaimName", s.archival_claim,
          NameRule::kDns1123Subdomain);
  }
}

// spec.budget.perRunTokens: 0 or absent is no cap; a cap below
// spec.model.maxTokens (parsed first) fits no model call, so no run could do
// anything under it.
void parse_per_run_tokens(const Json& spec, AgentSpec& s, std::vector<std::string>& errors) {
  const Json* value = find_path(spec, "budget/perRunTokens");
  if (value == nullptr || value->is_null()) return;
  if (!value->is_number_integer() || value->get<int64_t>() < 0 ||
      value->get<int64_t>() > api::kPerRunTokensMax) {
    errors.push_back("spec.budget.perRunTokens: must be an integer from 0 to " +
                     std::to_string(api::kPerRunTokensMax) + " (0: no cap)");
    return;
  }
  s.per_run_tokens = value->get<int64_t>();
  HB_ASSERT_MSG(s.per_run_tokens >= 0 && s.per_run_tokens <= api::kPerRunTokensMax,
                "a perRunTokens kept lies in 0..its documented maximum");
  if (s.per_run_tokens > 0 && s.per_run_tokens < s.max_tokens) {
    errors.push_back("spec.budget.perRunTokens: " + std::to_string(s.per_run_tokens) +
                     " is less than spec.model.maxTokens (" + std::to_string(s.max_tokens) +
                     "), so no model call fits under it; raise it, lower maxTokens, or set 0 "
                     "for no cap");
  }
}

// spec.budget.dailyCents: 0 or absent is no daily budget.
void parse_daily_budget(const Json& spec, AgentSpec& s, std::vector<std::string>& errors) {
  const Json* value = find_path(spec, "budget/dailyCents");
  if (value == nullptr || value->is_null()) return;
  if (!value->is_number_integer() || value->get<int64_t>() < 0) {
    errors.push_back(
        "spec.budget.dailyCents: must be a whole number of cents, 0 or more (0: none)");
    return;
  }
  s.daily_budget_cents = value->get<int64_t>();
  HB_ASSERT_MSG(s.daily_budget_cents >= 0, "a dailyCents kept is 0 or more");
}

// An optional price of spec.model: unset when absent, else within the CRD's bounds.
std::optional<double> clamped_price(const Json& model, std::string_view path) {
  const std::optional<double> price = number_at(model, path);
  if (!price) return std::nullopt;
  const double clamped = std::clamp(*price, 0.0, kPriceCentsPerMillionTokensMax);
  HB_ASSERT_MSG(!(clamped < 0) && !(clamped > kPriceCentsPerMillionTokensMax),
                "a price kept lies in 0..its documented maximum");
  return clamped;
}

// What the job builder copies into the Pod as written (job_builder.h).
void parse_pod_fields(const Json& runtime, AgentSpec& s) {
  HB_ASSERT_MSG(s.runtime_env.empty(), "read once, into a fresh spec");
  s.runtime = runtime;
  if (const Json* command = find_path(runtime, "command");
      command != nullptr && command->is_array()) {
    s.runtime_command = *command;
  }
  if (const Json* env = find_path(runtime, "env"); env != nullptr && env->is_array()) {
    for (const Json& e : *env) s.runtime_env.push_back({string_at(e, "name"), e});
  }
  if (const Json* resources = find_path(runtime, "resources")) s.runtime_resources = *resources;
  s.tools_image = string_at(runtime, "tools/image");
  if (const Json* resources = find_path(runtime, "tools/resources")) s.tools_resources = *resources;
  s.runtime_class_name = string_at(runtime, "runtimeClassName");
}

// The sections a spec's fields are read from; an absent one reads as empty.
const Json& empty_section() {
  static const Json kEmpty = Json::object();
  return kEmpty;
}

const Json& section(const Json& parent, std::string_view name) {
  const Json* p = find_path(parent, name);
  return p != nullptr ? *p : empty_section();
}

void parse_metadata(const Json& agent, AgentSpec& s) {
  const Json& metadata = section(agent, "metadata");
  s.api_version = string_view_at(agent, "apiVersion");
  s.kind = string_view_at(agent, "kind");
  s.name = string_view_at(metadata, "name");
  s.ns = string_view_at(metadata, "namespace");
  s.uid = string_view_at(metadata, "uid");
  s.generation = int_at(metadata, "generation").value_or(0);
  s.created = time_at(metadata, "creationTimestamp").value_or(TimePoint{});
  s.deleting = find_path(metadata, "deletionTimestamp") != nullptr;
}

void parse_agent_type(const Json& spec, AgentSpec& s, std::vector<std::string>& errors) {
  const std::string_view type =
      string_view_at(spec, "type", api::to_string(api::kAgentTypeDefault));
  if (auto parsed = api::parse_agent_type(type)) {
    s.type = *parsed;
  } else {
    errors.push_back("spec.type \"" + api::quote_untrusted(type) +
                     "\": unknown agent type; use one of " + std::string(api::agent_type_names()));
  }
}

void parse_model(const Json& model, AgentSpec& s, std::vector<std::string>& errors) {
  s.provider = string_view_at(model, "provider");
  const std::optional<api::Provider> provider = api::parse_provider(s.provider);
  if (!provider) {
    errors.push_back("spec.model.provider \"" + api::quote_untrusted(s.provider) +
                     "\": unknown provider; use openai (any OpenAI-compatible endpoint) "
                     "or anthropic");
  }
  s.model = string_view_at(model, "model");
  s.base_url = string_view_at(model, "baseURL");
  if (s.model.empty()) {
    errors.push_back("spec.model.model: is required");
  }
  if (const Json* key_ref = find_path(model, "apiKeySecretRef"); key_ref != nullptr) {
    s.api_key = KeyRef{string_at(*key_ref, "name"), string_at(*key_ref, "key")};
  } else if (provider == api::Provider::kAnthropic) {
    errors.push_back("spec.model.apiKeySecretRef: is required for provider anthropic");
  }

  s.pricing.input_cents_per_million_tokens =
      std::clamp(number_at(model, "pricing/inputCentsPerMillionTokens").value_or(0), 0.0,
                 kPriceCentsPerMillionTokensMax);
  s.pricing.output_cents_per_million_tokens =
      std::clamp(number_at(model, "pricing/outputCentsPerMillionTokens").value_or(0), 0.0,
                 kPriceCentsPerMillionTokensMax);
  s.pricing.cached_input_cents_per_million_tokens =
      clamped_price(model, "pricing/cachedInputCentsPerMillionTokens");
  s.pricing.cache_write_input_cents_per_million_tokens =
      clamped_price(model, "pricing/cacheWriteInputCentsPerMillionTokens");
  s.max_tokens = std::clamp<int64_t>(int_at(model, "maxTokens").value_or(kModelMaxTokensDefault), 1,
                                     kModelMaxTokensMax);
  // Whatever the Agent says: the bounds a run's cost stays finite within (run_cost.cpp).
  HB_ASSERT(s.pricing.input_cents_per_million_tokens >= 0 &&
            s.pricing.input_cents_per_million_tokens <= kPriceCentsPerMillionTokensMax &&
            s.pricing.output_cents_per_million_tokens >= 0 &&
            s.pricing.output_cents_per_million_tokens <= kPriceCentsPerMillionTokensMax);
}

void parse_schedule_fields(const Json& heartbeat, AgentSpec& s, std::vector<std::string>& errors) {
  const std::string_view interval = string_view_at(heartbeat, "interval");
  const std::string_view cron = string_view_at(heartbeat, "schedule");
  const std::string_view spread = string_view_at(heartbeat, "spread");
  const std::string_view time_zone = string_view_at(heartbeat, "timeZone");
  if (!interval.empty() || !cron.empty()) {
    const std::string hash_key = schedule::schedule_hash_key(s.ns, s.name);
    auto parsed = schedule::parse_schedule({interval, cron, spread, hash_key, time_zone});
    if (parsed.ok()) {
      s.schedule = *parsed.value;
      if (auto zone = schedule::find_time_zone(time_zone); zone.ok()) s.time_zone = *zone.value;
    } else {
      errors.push_back(parsed.error);
    }
  } else {
    unscheduled_field_errors(spread, time_zone, errors);
  }
  if (s.schedule || (interval.empty() && cron.empty())) {
    s.idle_backoff = parse_idle_backoff(heartbeat, s.schedule ? &*s.schedule : nullptr, errors);
  }
  HB_ASSERT_MSG(!s.idle_backoff || s.schedule, "idleBackoff is kept only beside a schedule");
  s.mentions = parse_mention_policy(heartbeat, errors);
  s.starting_deadline_seconds = int_at(heartbeat, "startingDeadlineSeconds");
  if (s.starting_deadline_seconds && (*s.starting_deadline_seconds < 0 ||
                                      *s.starting_deadline_seconds > kStartingDeadlineSecondsMax)) {
    errors.push_back("spec.heartbeat.startingDeadlineSeconds: must be 0.." +
                     std::to_string(kStartingDeadlineSecondsMax) + " (a year)");
    s.starting_deadline_seconds.reset();
  }
}

void parse_history(const Json& heartbeat, AgentSpec& s) {
  s.context_runs = static_cast<int>(int_at(heartbeat, "contextRuns").value_or(kContextRunsDefault));
  const Json& limits = section(heartbeat, "historyLimits");
  s.history_succeeded =
      static_cast<int>(int_at(limits, "succeeded").value_or(kHistorySucceededDefault));
  s.history_failed = static_cast<int>(int_at(limits, "failed").value_or(kHistoryFailedDefault));
}

void parse_prompt(const Json& heartbeat, AgentSpec& s, std::vector<std::string>& errors) {
  // An empty prompt is a prompt (the heartbeat is skipped); an empty one
  // next to promptFrom is the field left at its default.
  const std::string_view inline_prompt = string_view_at(heartbeat, "prompt");
  const bool has_prompt = !inline_prompt.empty();
  const Json* prompt_from = find_path(heartbeat, "promptFrom");
  const bool has_prompt_from = prompt_from != nullptr;
  if (has_prompt && has_prompt_from) {
    errors.push_back("spec.heartbeat: set prompt or promptFrom, not both");
  } else if (!has_prompt_from && find_path(heartbeat, "prompt") == nullptr) {
    errors.push_back("spec.heartbeat.prompt: is required (or promptFrom.configMapKeyRef)");
  }
  s.prompt_blank = !has_prompt_from && is_blank(inline_prompt);
  if (has_prompt_from) {
    s.prompt_from = KeyRef{string_at(*prompt_from, "configMapKeyRef/name"),
                           string_at(*prompt_from, "configMapKeyRef/key")};
    if (s.prompt_from->name.empty() || s.prompt_from->key.empty()) {
      errors.push_back("spec.heartbeat.promptFrom.configMapKeyRef: needs name and key");
    }
  }
  HB_ASSERT_MSG(!(s.prompt_blank && s.prompt_from),
                "a blank inline prompt is never read beside promptFrom");
}

void parse_memory_and_budget(const Json& spec, AgentSpec& s, std::vector<std::string>& errors) {
  s.persona = string_view_at(spec, "persona");
  s.memory_blocks = parse_memory_blocks(spec);
  s.archival_claim = string_at(spec, "memory/archival/persistentVolumeClaimName");
  s.paused = bool_at(spec, "paused");
  s.monthly_budget_cents = int_at(spec, "budget/monthlyCents").value_or(0);
  s.per_run_cents = number_at(spec, "budget/perRunCents");
  parse_per_run_tokens(spec, s, errors);
  parse_daily_budget(spec, s, errors);
  const std::string_view resume = string_view_at(spec, "budget/resume", "Manual");
  if (resume == "NextPeriod") {
    s.budget_resume = BudgetResume::kNextPeriod;
  } else if (resume != "Manual") {
    errors.push_back("spec.budget.resume \"" + api::quote_untrusted(resume) +
                     "\": use Manual (wait for a person) or NextPeriod (resume next month)");
  }
}

void parse_runtime(const Json& runtime, AgentSpec& s, std::vector<std::string>& errors) {
  const std::string_view mode = string_view_at(runtime, "mode", "builtin");
  s.command_may_pause = bool_at(runtime, "pauseHeartbeats");
  s.runtime_image = string_at(runtime, "image");
  if (mode == "command") {
    s.mode = RuntimeMode::kCommand;
    if (string_view_at(runtime, "image").empty()) {
      errors.push_back("spec.runtime.image: is required when spec.runtime.mode is command");
    }
    const Json* command = find_path(runtime, "command");
    if (command == nullptr || !command->is_array() || command->empty()) {
      errors.push_back("spec.runtime.command: is required when spec.runtime.mode is command");
    }
  } else if (mode != "builtin") {
    errors.push_back("spec.runtime.mode \"" + api::quote_untrusted(mode) +
                     "\": use builtin or command");
  }
  s.timeout_seconds = int_at(runtime, "timeoutSeconds").value_or(kRuntimeTimeoutSecondsDefault);
  s.grace_seconds = int_at(runtime, "graceSeconds").value_or(kRuntimeGraceSecondsDefault);
  if (s.timeout_seconds < 1) {
    errors.push_back("spec.runtime.timeoutSeconds: must be at least 1");
  }
  if (s.grace_seconds < 0) {
    errors.push_back("spec.runtime.graceSeconds: must not be negative");
  }
  parse_pod_fields(runtime, s);
  for (std::string& error : check_pod_settings(runtime, "spec.runtime")) {
    errors.push_back(std::move(error));
  }
}

}  // namespace

int64_t context_runs_of(const Json& agent) {
  return int_at(agent, "spec/heartbeat/contextRuns").value_or(kContextRunsDefault);
}

std::vector<api::MemoryBlock> parse_memory_blocks(const Json& spec) {
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

SpecCheck parse_agent_spec(const Json& agent) {
  SpecCheck check;
  AgentSpec& s = check.spec;
  parse_metadata(agent, s);
  // A spec that is not an object reads as an empty one (every field missing).
  const Json& spec_or_not = section(agent, "spec");
  const Json& spec = spec_or_not.is_object() ? spec_or_not : empty_section();
  parse_agent_type(spec, s, check.errors);
  parse_model(section(spec, "model"), s, check.errors);
  const Json& heartbeat = section(spec, "heartbeat");
  parse_schedule_fields(heartbeat, s, check.errors);
  parse_history(heartbeat, s);
  parse_prompt(heartbeat, s, check.errors);
  parse_memory_and_budget(spec, s, check.errors);
  parse_runtime(section(spec, "runtime"), s, check.errors);
  reference_name_errors(s, check.errors);
  HB_ASSERT_MSG(
      !s.starting_deadline_seconds || (*s.starting_deadline_seconds >= 0 &&
                                       *s.starting_deadline_seconds <= kStartingDeadlineSecondsMax),
      "an out-of-range deadline is an error, not a value");
  HB_ASSERT_MSG(!check.errors.empty() || (s.timeout_seconds >= 1 && s.grace_seconds >= 0),
                "a valid spec's run times are in range");
  return check;
}

bool pause_allowed(const AgentSpec& spec) {
  if (spec.mode == RuntimeMode::kCommand) return spec.command_may_pause;
  return api::capabilities(spec.type).supports_heartbeats;
}

}  // namespace hb::controllers
