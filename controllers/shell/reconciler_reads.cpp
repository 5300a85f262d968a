// The AgentReconciler's reads: what a pass reads besides the caches' views
// (the prompt, runs read again, the ledger record, the policies over an agent).
#include <spdlog/spdlog.h>

#include "api/object_names.h"
#include "controllers/model/agent_grants.h"
#include "controllers/model/managed_namespaces.h"
#include "controllers/model/names.h"
#include "controllers/model/text_util.h"
#include "controllers/shell/agent_reconciler.h"
#include "controllers/spend/agent_ledger.h"
#include "kube/errors.h"

namespace hb::controllers {

namespace {

using kube::ErrorKind;
namespace res = kube::resources;

}  // namespace

std::optional<Json> AgentReconciler::agent(const std::string& ns, const std::string& name) {
  if (!namespace_refusal(ns, config_.own_namespace).empty()) return std::nullopt;
  return overlay_.merge(kOverlayAgents, object_key(ns, name), view_.agent(ns, name));
}

std::vector<Json> AgentReconciler::runs_of(const std::string& ns, const std::string& agent) {
  return overlay_.merge_list(kOverlayRuns, object_key(ns, agent), view_.runs_of(ns, agent),
                             [&](const Json& r) {
                               return string_at(r, "metadata/namespace") == ns &&
                                      string_at(r, "spec/agentRef/name") == agent;
                             });
}

kube::Result<Json> AgentReconciler::get_run(const std::string& ns, const std::string& name) {
  HB_TRY_ASSIGN(Json run, client_->get(res::kHeartbeatRuns, ns, name));
  overlay_.put(kOverlayRuns, run);
  return run;
}

kube::Result<std::optional<Json>> AgentReconciler::read_grant(const std::string& kind,
                                                              const std::string& ns,
                                                              const std::string& name) {
  HB_ASSERT_MSG(kind == kKindRoles || kind == kKindRoleBindings, "a grant is a Role or binding");
  kube::Result<Json> got = client_->get(agent_object_resource(kind), ns, name);
  if (got.is(ErrorKind::kNotFound)) return std::optional<Json>();
  HB_TRY_ASSIGN(Json object, std::move(got));
  return std::optional<Json>(std::move(object));
}

std::string AgentReconciler::policies_now(const std::string& ns, const std::string& agent) const {
  if (!config_.policies) return "";
  return policies_annotation(config_.policies->policies_selecting(object_key(ns, agent)));
}

std::vector<PolicySpec> AgentReconciler::policies_over(const std::string& ns,
                                                       const std::string& agent) const {
  if (!config_.policies) return {};
  return config_.policies->policies_over(object_key(ns, agent));
}

std::vector<std::string> AgentReconciler::admitting_policies_of(const Json& run,
                                                                const Json* job) const {
  const std::string ns = string_at(run, "metadata/namespace");
  return admitting_policies(job, run, [this, &ns](const std::string& policy) {
    return config_.policies && config_.policies->knows_policy(object_key(ns, policy));
  });
}

kube::Result<AgentReconciler::Prompt> AgentReconciler::resolve_prompt(const Json& agent) {
  const Json* from = find_path(agent, "spec/heartbeat/promptFrom/configMapKeyRef");
  if (from == nullptr) {
    std::string text = string_at(agent, "spec/heartbeat/prompt");
    if (!is_blank(text)) return Prompt{std::move(text), {}, "spec.heartbeat.prompt"};
    return Prompt{
        std::nullopt, PromptGap{kReasonPromptEmpty, "spec.heartbeat.prompt is empty"}, {}};
  }
  const std::string cm = string_at(*from, "name");
  const std::string key = string_at(*from, "key");
  // The spec check refuses such a name already; no request is ever built
  // from one, whichever path asked (a name is a URL segment here).
  if (auto bad = api::name_problem("spec.heartbeat.promptFrom.configMapKeyRef.name", cm,
                                   api::NameRule::kDns1123Subdomain)) {
    return Prompt{std::nullopt, PromptGap{kReasonPromptNotFound, std::move(*bad)}, {}};
  }
  const std::string field = "spec.heartbeat.promptFrom.configMapKeyRef: ConfigMap \"" + cm + "\"";
  kube::Result<Json> object =
      client_->get(res::kConfigMaps, string_at(agent, "metadata/namespace"), cm);
  if (!object.ok() && !object.is(ErrorKind::kNotFound)) return std::move(object).error();
  if (!object.ok()) {
    return Prompt{std::nullopt,
                  PromptGap{kReasonPromptNotFound,
                            field + " does not exist; create it with key \"" + key + "\""},
                  {}};
  }
  const Json* data = find_path(object.value(), "data");
  if (data == nullptr || !data->is_object() || !data->contains(key)) {
    return Prompt{
        std::nullopt,
        PromptGap{kReasonPromptNotFound, field + " has no key \"" + api::quote_untrusted(key) +
                                             "\"; add it or fix the key"},
        {}};
  }
  std::string text = string_at(*data, key);
  if (!is_blank(text)) {
    return Prompt{std::move(text), {}, field + " key \"" + api::quote_untrusted(key) + "\""};
  }
  return Prompt{
      std::nullopt, PromptGap{kReasonPromptEmpty, field + " key \"" + key + "\" is empty"}, {}};
}

kube::Result<std::optional<AgentReconciler::Prompt>> AgentReconciler::read_before_deciding(
    const std::string& ns, const std::string& name, const Json& agent, const AgentView& view,
    const std::vector<Json>& runs, AgentDecisionInput& input) {
  const ReadsNeeded reads = reads_needed(view, input.runs, input.ledger, input.now);
  // From the cache, and only when a finished run's output @mentions someone (rare).
  for (const std::string& target : reads.mention_targets) {
    const std::optional<Json> other = this->agent(ns, target);
    input.mention_accepted[target] =
        other && accepts_mention(parse_agent_spec(*other).spec.mentions, name);
  }
  if (config_.concurrency && reads.gate) {
    std::vector<std::string> run_keys;
    run_keys.reserve(runs.size());
    for (const Json& run : runs) run_keys.push_back(object_key(ns, name_of(run)));
    input.gate = config_.concurrency->snapshot(object_key(ns, name), run_keys);
  }
  std::optional<Prompt> prompt;
  if (reads.prompt) {
    HB_TRY_ASSIGN(prompt, resolve_prompt(agent));
    input.prompt.done = true;
    if (!prompt->text) input.prompt.gap = prompt->gap;
  }
  return prompt;
}

// The runs the new run's context shows whose output the cache dropped
// (past the window it keeps: contextRuns raised, a newer run deleted), read
// from the API server; nullopt for one deleted meanwhile. Usually none.
kube::Result<AgentReconciler::RereadRuns> AgentReconciler::reread_context_runs(
    const std::string& ns, const AgentSpec& spec, const std::string& run_name,
    const std::vector<EarlierRun>& earlier) {
  RereadRuns out;
  for (const std::string& name : context_runs_to_read(earlier, run_name, spec.context_runs)) {
    kube::Result<Json> read = client_->get(res::kHeartbeatRuns, ns, name);
    if (!read.ok() && read.error().kind == kube::ErrorKind::kNotFound) {
      out.emplace(name, std::nullopt);
      continue;
    }
    HB_TRY_ASSIGN(Json fresh, std::move(read));
    out.emplace(name, std::move(fresh));
  }
  return out;
}

std::vector<const Json*> AgentReconciler::with_reread(const std::vector<const Json*>& history,
                                                      const RereadRuns& reread) {
  std::vector<const Json*> out;
  out.reserve(history.size());
  for (const Json* run : history) {
    auto it = reread.find(name_of(*run));
    if (it == reread.end()) {
      out.push_back(run);
    } else if (it->second) {
      out.push_back(&*it->second);
    }
  }
  return out;
}

// A raised charge is only right while its run is unmarked, and the agent
// status write that carries it is conditional on the Agent alone: read each
// such run from the API server. A copy newer than this pass's (a mark that
// landed while the cache was behind) goes to the overlay and the pass is
// decided again on it, instead of charging the run twice.
kube::Result<bool> AgentReconciler::runs_still_unmarked(const std::string& ns,
                                                        const std::vector<std::string>& names,
                                                        const std::vector<Json>& runs) {
  for (const std::string& name : names) {
    const Json* seen = find_named(runs, name);
    HB_TRY_ASSIGN(const Json fresh, get_run(ns, name));
    if (seen == nullptr || string_at(fresh, "metadata/resourceVersion") !=
                               string_at(*seen, "metadata/resourceVersion")) {
      spdlog::info("event=stale_run_view agent_namespace={} run={}", ns, name);
      return false;
    }
  }
  return true;
}

kube::Result<std::optional<LedgerRecord>> AgentReconciler::ledger_record(const std::string& ns,
                                                                         const std::string& name,
                                                                         const AgentStatus* status,
                                                                         TimePoint now) {
  if (!config_.ledger) return std::optional<LedgerRecord>();
  HB_TRY_ASSIGN(std::optional<LedgerRecord> record, config_.ledger->get(ns, name));
  if (record) return record;
  return std::optional(status != nullptr ? record_from_status(ns, name, *status, now)
                                         : LedgerRecord{ns, name, {}, {}, {}});
}

}  // namespace hb::controllers
