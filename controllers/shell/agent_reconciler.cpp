#include "controllers/shell/agent_reconciler.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>

#include "api/object_names.h"
#include "api/utf8.h"
#include "controllers/agent/agent_conditions.h"
#include "controllers/model/agent_grants.h"
#include "controllers/model/managed_namespaces.h"
#include "controllers/model/names.h"
#include "controllers/model/text_util.h"
#include "controllers/plan/orphan_plan.h"
#include "controllers/pod/job_pods.h"
#include "controllers/run/cache_projection.h"
#include "controllers/run/run_conditions.h"
#include "controllers/schedule/spend.h"
#include "controllers/schedule/spend_day.h"
#include "controllers/schedule/time_zone.h"
#include "controllers/schedule/utc_time.h"
#include "controllers/shell/agent_pass_writer.h"
#include "controllers/spend/agent_ledger.h"
#include "controllers/spend/pricing.h"
#include "kube/errors.h"

namespace hb::controllers {

namespace {

using kube::ErrorKind;
namespace res = kube::resources;

const kube::Resource& resource_for(const std::string& kind) {
  if (kind == "serviceaccounts") return res::kServiceAccounts;
  if (kind == "roles") return res::kRoles;
  if (kind == "rolebindings") return res::kRoleBindings;
  if (kind == "leases") return res::kLeases;
  return res::kConfigMaps;
}

// An object of that name this run does not own: someone else's, never used.
kube::Error not_owned_by_run(const std::string& what, const std::string& ns,
                             const std::string& name, const std::string& run_name) {
  kube::Error error;
  error.message = what + " " + ns + "/" + name + " exists and is not owned by run " + run_name +
                  "; the operator never uses it for this run";
  error.context = "start run " + ns + "/" + run_name;
  return error;
}

// When the key is looked at again: at the decision's next instant; at once
// when an object in the way held a run back (so the condition names it);
// then when that object is looked for again.
ReconcileResult requeue_for(const AgentDecision& d, TimePoint now, bool blocked,
                            bool object_in_the_way) {
  ReconcileResult result;
  if (d.requeue_at) {
    const auto delay = std::chrono::ceil<std::chrono::milliseconds>(*d.requeue_at - now);
    result.requeue_after = std::max(delay, std::chrono::milliseconds(1));
  }
  if (blocked) {
    result.requeue_after = std::chrono::milliseconds(1);
  } else if (object_in_the_way) {
    result.requeue_after =
        std::min(result.requeue_after.value_or(kObjectInTheWayRecheck),
                 std::chrono::duration_cast<std::chrono::milliseconds>(kObjectInTheWayRecheck));
  }
  return result;
}

// Also looked at again when the next orphaned run falls past retention.
ReconcileResult with_retention(ReconcileResult result, std::optional<TimePoint> due,
                               TimePoint now) {
  if (!due) return result;
  const auto delay = std::max(std::chrono::ceil<std::chrono::milliseconds>(*due - now),
                              std::chrono::milliseconds(1));
  result.requeue_after = std::min(result.requeue_after.value_or(delay), delay);
  return result;
}

// Moves the runs of an earlier Agent of this name out of `runs` (run_record.h).
std::vector<Json> take_runs_of_other_agents(std::vector<Json>& runs, const std::string& uid) {
  const auto theirs = std::stable_partition(
      runs.begin(), runs.end(), [&](const Json& run) { return !run_of_other_agent(run, uid); });
  std::vector<Json> out(std::make_move_iterator(theirs), std::make_move_iterator(runs.end()));
  runs.erase(theirs, runs.end());
  return out;
}

// When this pass's writes that wait for the rate limiter give way: at the
// agent's next heartbeat, on the steady clock the limiter runs on.
kube::GiveWayTime give_way_time(const AgentDecision& d, TimePoint now,
                                std::chrono::steady_clock::time_point steady_now) {
  if (!d.next_heartbeat || *d.next_heartbeat <= now) return std::nullopt;
  return steady_now +
         std::chrono::duration_cast<std::chrono::steady_clock::duration>(*d.next_heartbeat - now);
}

// A run written is listed with its agent's runs (runs_of) only.
std::string run_overlay_group(const std::string& kind, const Json& object) {
  if (kind != kOverlayRuns) return {};
  return object_key(namespace_of(object), string_at(object, "spec/agentRef/name"));
}

}  // namespace

AgentReconciler::AgentReconciler(std::shared_ptr<kube::Client> client, const ClusterView& view,
                                 ReconcilerConfig config, Metrics& metrics, Clock clock,
                                 SteadyClock steady)
    : client_(std::move(client)),
      view_(view),
      config_(std::move(config)),
      metrics_(metrics),
      clock_(std::move(clock)),
      steady_(std::move(steady)),
      overlay_(steady_, run_overlay_group),
      lease_sightings_(steady_) {}

void AgentReconciler::forget_agent(const std::string& key) {
  std::lock_guard lock(mutex_);
  ensured_agents_.erase(key);
  grants_checked_.erase(key);
  in_the_way_.erase(key);
  lease_sightings_.forget(key);
  budget_blocked_.forget(key);
}

void AgentReconciler::note_refused(const std::string& ns, const std::string& name,
                                   const std::string& why) {
  const std::optional<Json> agent = view_.agent(ns, name);
  const std::string uid = agent ? string_at(*agent, "metadata/uid") : "";
  bool log = false, noted = false;
  {
    std::lock_guard lock(mutex_);
    log = refused_namespaces_logged_.insert(ns).second;
    noted = !uid.empty() && refused_agents_noted_.size() < kRefusedAgentsNotedMax &&
            refused_agents_noted_.insert(uid).second;
  }
  if (log) spdlog::warn("event=namespace_not_managed namespace={} reason=\"{}\"", ns, why);
  if (!noted) return;
  Event event;
  event.warning = true;
  event.reason = kReasonNamespaceNotManaged;
  event.message = "This Agent is ignored: " + why + ". Create it in another namespace.";
  record_event(*agent, nullptr, event, clock_());
}

void AgentReconciler::count_write(const char* kind) {
  metrics_.counter_add("heartbeat_api_writes_total", {{"kind", kind}});
  const kube::RequestClass cls = kube::current_request_priority().cls;
  metrics_.counter_add("heartbeat_api_writes_by_class_total",
                       {{"class", std::string(kube::request_class_name(cls))}});
}

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

std::string AgentReconciler::policies_now(const std::string& ns, const std::string& agent) const {
  if (!config_.policies) return "";
  return policies_annotation(config_.policies->policies_selecting(object_key(ns, agent)));
}

std::vector<PolicySpec> AgentReconciler::policies_over(const std::string& ns,
                                                       const std::string& agent) const {
  if (!config_.policies) return {};
  return config_.policies->policies_over(object_key(ns, agent));
}

void AgentReconciler::stamp_policies(Json& run) const {
  Json& annotations = run["metadata"]["annotations"];
  if (!annotations.is_object()) annotations = Json::object();
  if (annotations.contains(kAnnotationPolicies)) return;
  annotations[kAnnotationPolicies] =
      policies_now(string_at(run, "metadata/namespace"), string_at(run, "spec/agentRef/name"));
}

std::vector<std::string> AgentReconciler::admitting_policies_of(const Json& run,
                                                                const Json* job) const {
  const std::string ns = string_at(run, "metadata/namespace");
  return admitting_policies(job, run, [this, &ns](const std::string& policy) {
    return config_.policies && config_.policies->knows_policy(object_key(ns, policy));
  });
}

kube::Result<Json> AgentReconciler::create_run(const std::string& ns, const Json& run) {
  Json stamped = run;
  stamp_policies(stamped);
  HB_TRY_ASSIGN(Json created, client_->create(res::kHeartbeatRuns, ns, stamped));
  count_write(kWriteRunCreate);
  overlay_.put(kOverlayRuns, created);
  return created;
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

bool AgentReconciler::agent_objects_known_made(const Json& agent,
                                               const std::optional<Json>* lease_read) {
  const std::string uid = string_at(agent, "metadata/uid");
  const std::string key = object_key(agent);
  {
    std::lock_guard lock(mutex_);
    if (auto it = ensured_agents_.find(key); it != ensured_agents_.end() && it->second == uid) {
      return true;
    }
  }
  // The marked Lease in the cache says so without a request (after a
  // restart, for every Agent). Once it does, this process need not
  // remember the Agent itself.
  std::optional<Json> read_here;
  if (lease_read == nullptr) {
    read_here =
        view_.lease(string_at(agent, "metadata/namespace"), lease_name_for_agent(name_of(agent)));
  }
  const std::optional<Json>& lease = lease_read != nullptr ? *lease_read : read_here;
  if (!agent_objects_made(lease ? &*lease : nullptr, uid)) return false;
  std::lock_guard lock(mutex_);
  ensured_agents_.erase(key);
  return true;
}

kube::Result<std::string> AgentReconciler::ensure_agent_objects(
    const Json& agent, const std::optional<Json>* lease_read) {
  if (agent_objects_known_made(agent, lease_read)) return std::string();
  const std::string uid = string_at(agent, "metadata/uid");
  const std::string ns = string_at(agent, "metadata/namespace");
  std::string lease_name;
  bool lease_marked = false;
  // In order, stopping at the first object in the way: no grant is made
  // before the objects it names are this Agent's (agent_grants.h).
  for (const auto& [kind, object] :
       build_agent_objects(parse_agent_spec(agent).spec, config_.job)) {
    if (kind == kKindLeases) lease_name = name_of(object);
    kube::Result<Json> created = client_->create(resource_for(kind), ns, object);
    if (created.ok()) {
      count_write(kWriteAgentObjectCreate);
      continue;
    }
    if (!created.is(ErrorKind::kAlreadyExists)) return std::move(created).error();
    HB_TRY_ASSIGN(Json existing, client_->get(resource_for(kind), ns, name_of(object)));
    if (!controlled_by(existing, uid)) {
      if (!grants_rights(kind)) HB_TRY(remove_stale_grants(agent, kind, name_of(object)));
      return string_at(object, "kind") + " " + ns + "/" + name_of(object);
    }
    if (kind == kKindLeases) lease_marked = agent_objects_made(&existing, uid);
  }
  // Every object is there and this Agent's: mark the Lease for the next
  // restart (once per Agent, or once for a Lease made without the mark).
  if (!lease_marked) HB_TRY(mark_objects_made(ns, lease_name));
  std::lock_guard lock(mutex_);
  ensured_agents_[object_key(agent)] = uid;
  grants_checked_.erase(object_key(agent));
  return std::string();
}

// Once per Agent and object in the way (remembered until the objects are
// made): the Agent's Role naming that object and its RoleBinding, if an
// earlier version made them, are deleted, each conditional on its uid.
kube::Done AgentReconciler::remove_stale_grants(const Json& agent, const std::string& kind,
                                                const std::string& name) {
  const std::string key = object_key(agent);
  const std::string uid = string_at(agent, "metadata/uid");
  const std::string checked = uid + "/" + kind + "/" + name;
  {
    std::lock_guard lock(mutex_);
    if (auto it = grants_checked_.find(key); it != grants_checked_.end() && it->second == checked)
      return kube::done();
  }
  const std::string ns = string_at(agent, "metadata/namespace");
  const std::string grant = service_account_name(name_of(agent));
  auto read = [&](const kube::Resource& r) -> kube::Result<std::optional<Json>> {
    kube::Result<Json> got = client_->get(r, ns, grant);
    if (got.is(ErrorKind::kNotFound)) return std::optional<Json>();
    HB_TRY_ASSIGN(Json object, std::move(got));
    return std::optional<Json>(std::move(object));
  };
  HB_TRY_ASSIGN(const std::optional<Json> role, read(res::kRoles));
  HB_TRY_ASSIGN(const std::optional<Json> binding, read(res::kRoleBindings));
  const StaleGrants stale =
      stale_grants(role ? &*role : nullptr, binding ? &*binding : nullptr, kind, name, uid);
  auto remove = [&](const kube::Resource& r, const Json& object) -> kube::Done {
    kube::DeleteOptions options;
    options.precondition_uid = string_at(object, "metadata/uid");
    kube::Result<Json> removed = client_->remove(r, ns, grant, options);
    if (!removed.ok() && !removed.is(ErrorKind::kNotFound)) return std::move(removed).error();
    if (removed.ok()) count_write(kWriteAgentGrantDelete);
    spdlog::warn("event=stale_grant_removed agent={}/{} kind={} name={} names=\"{} {}\"", ns,
                 name_of(agent), string_at(object, "kind"), grant, kind, name);
    return kube::done();
  };
  // The binding first: a Role left alone by a crash grants nothing.
  if (stale.delete_role_binding) HB_TRY(remove(res::kRoleBindings, *binding));
  if (stale.delete_role) HB_TRY(remove(res::kRoles, *role));
  std::lock_guard lock(mutex_);
  grants_checked_[key] = checked;
  return kube::done();
}

kube::Done AgentReconciler::mark_objects_made(const std::string& ns,
                                              const std::string& lease_name) {
  HB_TRY(client_->merge_patch(res::kLeases, ns, lease_name, agent_objects_made_patch()));
  count_write(kWriteAgentObjectMark);
  return kube::done();
}

kube::Result<std::string> AgentReconciler::object_in_the_way(const Json& agent) {
  const std::string uid = string_at(agent, "metadata/uid");
  const std::string key = object_key(agent);
  {
    std::lock_guard lock(mutex_);
    auto it = in_the_way_.find(key);
    if (it == in_the_way_.end() || it->second.uid != uid) return std::string();
    if (steady_() - it->second.at < kObjectInTheWayRecheck) {
      return it->second.object;
    }
  }
  // Looked at again before the decision, so the Agent's conditions do not
  // flap to valid while the object is still there.
  HB_TRY_ASSIGN(std::string blocking, ensure_agent_objects(agent));
  std::lock_guard lock(mutex_);
  if (blocking.empty()) {
    in_the_way_.erase(key);
  } else {
    in_the_way_[key] = {uid, blocking, steady_()};
  }
  return blocking;
}

kube::Done AgentReconciler::write_run_status(Json& run, const Json& status, bool final_with_label) {
  const std::string ns = string_at(run, "metadata/namespace");
  const std::string name = name_of(run);
  const Json* stored = find_path(run, "status");
  // The moment its cost is recorded is the run's one audit line.
  const bool newly_recorded =
      bool_at(status, "costRecorded") && (stored == nullptr || !bool_at(*stored, "costRecorded"));
  // Conditions ride on every status write (no write of their own).
  Json patch_status =
      with_run_conditions(status, stored, int_at(run, "metadata/generation").value_or(1), now());
  if (stored != nullptr && stored->is_object()) {
    for (auto it = stored->begin(); it != stored->end(); ++it) {
      if (!patch_status.contains(it.key())) patch_status[it.key()] = nullptr;
    }
  }
  // Conditional on the run as this pass saw it: the patch replaces the whole
  // status, so one decided from a stale copy (a lost answer, a cache behind)
  // must not overwrite a newer one, least of all a counted run's usage. A
  // 409 retries the pass with the newer copy.
  Json status_patch = {{"status", std::move(patch_status)}};
  if (const std::string rv = string_at(run, "metadata/resourceVersion"); !rv.empty()) {
    status_patch["metadata"] = {{"resourceVersion", rv}};
  }
  HB_TRY_ASSIGN(Json updated, client_->merge_patch_status(res::kHeartbeatRuns, ns, name,
                                                          std::move(status_patch)));
  count_write(kWriteRunStatus);
  if (newly_recorded) spdlog::info("{}", audit_line(updated));
  overlay_.put(kOverlayRuns, updated);
  run = updated;  // a later write of this pass is conditional on this version
  const std::string phase = string_at(status, "phase");
  if (!final_with_label || !phase_is_labelled(phase)) return kube::done();
  const Json* labels = find_path(updated, "metadata/labels");
  const bool labelled = labels != nullptr && labels->is_object() && labels->contains(kLabelPhase) &&
                        (*labels)[kLabelPhase] == phase;
  if (labelled) return kube::done();
  kube::RequestPriorityScope bookkeeping(kube::RequestClass::kBookkeeping);
  Json patch = {{"metadata", {{"labels", {{kLabelPhase, phase}}}}}};
  HB_TRY_ASSIGN(updated, client_->merge_patch(res::kHeartbeatRuns, ns, name, patch));
  count_write(kWriteRunLabel);
  overlay_.put(kOverlayRuns, updated);
  run = std::move(updated);
  return kube::done();
}

kube::Done AgentReconciler::delete_job(const std::string& ns, const std::string& name) {
  kube::DeleteOptions options;
  options.propagation_policy = "Background";
  kube::Result<Json> removed = client_->remove(res::kJobs, ns, name, options);
  if (!removed.ok() && !removed.is(ErrorKind::kNotFound)) return std::move(removed).error();
  if (removed.ok()) {
    count_write(kWriteJobDelete);
    spdlog::info("event=job_deleted namespace={} job={}", ns, name);
  }
  overlay_.erase(kOverlayJobs, object_key(ns, name));
  return kube::done();
}

kube::Done AgentReconciler::delete_run(const std::string& ns, const std::string& name) {
  kube::DeleteOptions options;
  options.propagation_policy = "Background";
  kube::Result<Json> removed = client_->remove(res::kHeartbeatRuns, ns, name, options);
  if (!removed.ok() && !removed.is(ErrorKind::kNotFound)) return std::move(removed).error();
  if (removed.ok()) count_write(kWriteRunDelete);
  overlay_.erase(kOverlayRuns, object_key(ns, name));
  return kube::done();
}

void AgentReconciler::record_event(const Json& agent, const Json* run, const Event& event,
                                   TimePoint now) {
  const Json& target = run != nullptr ? *run : agent;
  const std::string ns = string_at(target, "metadata/namespace");
  // client-go's naming (the time in nanoseconds, in hex) plus this process's
  // count of Events, so two at the same instant differ; no randomness, so
  // the simulation replays a seed exactly.
  const auto nanos = std::chrono::duration_cast<std::chrono::nanoseconds>(now.time_since_epoch());
  char suffix[40];
  std::snprintf(suffix, sizeof suffix, "%llx.%llx", static_cast<unsigned long long>(nanos.count()),
                static_cast<unsigned long long>(++events_recorded_));
  const std::string stamp = schedule::format_rfc3339(now);
  Json object = {{"apiVersion", "v1"},
                 {"kind", "Event"},
                 {"metadata",
                  {{"name", std::string(api::utf8_prefix(name_of(target), 200)) + "." + suffix},
                   {"namespace", ns}}},
                 {"involvedObject",
                  {{"apiVersion", std::string(kApiVersion)},
                   {"kind", run != nullptr ? std::string(kRunKind) : std::string(kAgentKind)},
                   {"name", name_of(target)},
                   {"namespace", ns},
                   {"uid", string_at(target, "metadata/uid")}}},
                 {"reason", event.reason},
                 {"message", std::string(api::utf8_prefix(event.message, kEventMessageBytesMax))},
                 {"type", event.warning ? "Warning" : "Normal"},
                 {"source", {{"component", "heartbeat-operator"}}},
                 {"reportingComponent", "heartbeat-operator"},
                 {"firstTimestamp", stamp},
                 {"lastTimestamp", stamp},
                 {"count", 1}};
  const kube::Result<Json> created = client_->create(res::kEvents, ns, object);
  if (created.ok()) {
    count_write(kWriteEvent);
    return;
  }
  spdlog::warn("event=event_write_failed namespace={} object={} reason={} error=\"{}\"", ns,
               name_of(target), event.reason, created.error().describe());
}

// The runs the new run's context shows whose output the cache dropped
// (past the window it keeps: contextRuns raised, a newer run deleted), read
// from the API server; nullopt for one deleted meanwhile. Usually none.
kube::Result<AgentReconciler::RereadRuns> AgentReconciler::reread_context_runs(
    const std::string& ns, const Json& agent, const std::string& run_name,
    const std::vector<const Json*>& history) {
  RereadRuns out;
  for (const std::string& name :
       context_runs_to_read(earlier_runs(history), run_name, context_runs_of(agent))) {
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

kube::Result<bool> AgentReconciler::start_run(const Json& agent, Json& run,
                                              const std::vector<const Json*>& history,
                                              const std::optional<Prompt>& read, TimePoint now) {
  const std::string ns = string_at(run, "metadata/namespace");
  const std::string run_name = name_of(run);
  std::optional<Prompt> resolved = read;
  if (!resolved) {
    HB_TRY_ASSIGN(resolved, resolve_prompt(agent));
  }
  const Prompt& prompt = *resolved;
  if (!prompt.text) {
    // A run someone asked for (or one queued before the prompt went away)
    // cannot start, saying what is missing.
    HB_TRY(fail_before_start(agent, run, prompt.gap.reason, prompt.gap.message, now));
    return true;
  }
  HB_TRY_ASSIGN(const std::string blocking, ensure_agent_objects(agent));
  if (!blocking.empty()) {
    std::lock_guard lock(mutex_);
    in_the_way_[object_key(agent)] = {string_at(agent, "metadata/uid"), blocking, steady_()};
    spdlog::warn("event=object_in_the_way agent={}/{} run={} object=\"{}\"", ns, name_of(agent),
                 run_name, blocking);
    return false;
  }
  if (!run_of_agent(run, string_at(agent, "metadata/uid"))) {
    // A run made with kubectl: this Agent's from now on, stamped with the
    // policies selecting it (the run is the audit record: no ownerReference).
    // Whatever annotations its author set for these two are replaced.
    Json patch = {
        {"metadata",
         {{"annotations",
           {{kAnnotationAgentUid, string_at(agent, "metadata/uid")},
            {kAnnotationPolicies, policies_now(ns, name_of(agent))}}},
          {"labels",
           {{kLabelAgent, label_safe_name(name_of(agent))}, {kLabelManagedBy, kManagedByValue}}}}}};
    HB_TRY_ASSIGN(Json adopted, client_->merge_patch(res::kHeartbeatRuns, ns, run_name, patch));
    overlay_.put(kOverlayRuns, adopted);
    count_write(kWriteRunAdopt);
  }
  // The runner's per-run stops use the price the operator charges, the
  // token cap of the Agent and its policies, and what is held ahead for it.
  const AgentSpec spec = parse_agent_spec(agent).spec;
  const std::vector<PolicySpec> policies = policies_over(ns, name_of(agent));
  const Pricing pricing = effective_pricing(spec, policies).pricing;
  const std::optional<int64_t> per_run_tokens = effective_per_run_tokens(spec, policies);
  HB_TRY_ASSIGN(const HoldDecision hold,
                hold_budget(agent, run, spec,
                            run_worst_case_cents(spec, pricing, per_run_tokens.value_or(0)), now));
  if (!hold.start) {
    {
      std::lock_guard lock(mutex_);
      waiting_for_budget_.insert(object_key(agent));
    }
    spdlog::info("event=run_waits_for_budget agent={}/{} run={} budget={}", ns, name_of(agent),
                 run_name, hold.waiting_on);
    return false;
  }
  HB_TRY_ASSIGN(const RereadRuns reread, reread_context_runs(ns, agent, run_name, history));
  const StartingRun starting = starting_run(run);
  const Json context =
      render_context({&spec, &starting, *prompt.text, earlier_runs(with_reread(history, reread)),
                      now, hold.cents, is_day_pool(hold.bound_by), agent_spend(agent)},
                     config_.job, pricing, per_run_tokens);
  const std::string context_text = context.dump();
  if (auto too_large = context_too_large(context_text.size(), prompt.source, prompt.text->size())) {
    budget_holds_.release(object_key(ns, run_name));
    HB_TRY(fail_before_start(agent, run, kReasonContextTooLarge, *too_large, now));
    return true;
  }
  JobPlan plan = build_job(starting, spec, context_text, config_.job);
  plan.job["metadata"]["annotations"][kAnnotationStartedAt] = schedule::format_rfc3339(now);
  // The admitting policies' trusted copy and the cents held for the run:
  // a Job's template cannot change.
  Json& template_annotations = plan.job["spec"]["template"]["metadata"]["annotations"];
  template_annotations[kAnnotationPolicies] = policies_now(ns, name_of(agent));
  if (hold.cents) template_annotations[kAnnotationBudgetHold] = format_hold_cents(*hold.cents);
  HB_TRY_ASSIGN(const StartedJob job, create_context_and_job(run, plan));
  // The run's Running status is not written here: the dispatch path is the
  // run and its Job. The Job (in the overlay now, in the cache soon) is the
  // mark that the run started; the next pass, which the Job's watch event
  // queues behind other agents' dispatches, adopts it and writes Running
  // (observe_run), as after a crash between the two writes.
  if (!job.created_at) return true;  // adopted an existing Job: counted when it was made
  if (config_.export_span) {
    if (auto span = scheduling_span(run, {job.name, job.uid, *job.created_at})) {
      config_.export_span(std::move(*span));
    }
  }
  const std::string source = string_at(run, "spec/invocationSource", "manual");
  metrics_.counter_add("heartbeat_runs_started_total", {{"source", source}});
  // Lag as the issue defines it: the Job's creation (after its create call
  // returned) minus the slot, so the run and Job writes are included.
  auto slot = time_at(run, "spec/scheduledTime");
  if (slot && source == kSourceScheduler) {
    metrics_.observe("heartbeat_schedule_lag_seconds", {},
                     std::chrono::duration<double>(*job.created_at - *slot).count());
  }
  spdlog::info("event=run_started agent={}/{} run={} job={} source={}", ns, name_of(agent),
               run_name, job.name, source);
  return true;
}

// Finishes a run that cannot start without a Job (cost 0; the ledger marks
// it next time), saying why; the Agent's conditions name it (agent_conditions.h).
kube::Done AgentReconciler::fail_before_start(const Json& agent, Json& run,
                                              const std::string& reason, const std::string& message,
                                              TimePoint now) {
  Json status = {{"phase", "Failed"},
                 {"reason", reason},
                 {"message", message},
                 {"startedAt", schedule::format_rfc3339(now)},
                 {"finishedAt", schedule::format_rfc3339(now)},
                 {"durationSeconds", 0},
                 {"usage", {{"inputTokens", 0}, {"outputTokens", 0}, {"costCents", 0}}}};
  HB_TRY(write_run_status(run, status, true));
  spdlog::warn("event=run_not_started agent={}/{} run={} reason={}",
               string_at(run, "metadata/namespace"), name_of(agent), name_of(run), reason);
  return kube::done();
}

kube::Result<AgentReconciler::StartedJob> AgentReconciler::create_context_and_job(
    const Json& run, const JobPlan& plan) {
  const std::string ns = string_at(run, "metadata/namespace");
  const std::string run_uid = string_at(run, "metadata/uid");
  if (plan.context_config_map) {
    const std::string cm_name = name_of(*plan.context_config_map);
    kube::Result<Json> created = client_->create(res::kConfigMaps, ns, *plan.context_config_map);
    if (created.ok()) count_write(kWriteContextCreate);
    if (!created.ok() && !created.is(ErrorKind::kAlreadyExists)) return std::move(created).error();
    if (!created.ok()) {
      // Someone else's ConfigMap under this name would become the agent's context.
      HB_TRY_ASSIGN(Json existing, client_->get(res::kConfigMaps, ns, cm_name));
      if (!owned_by(existing, run_uid))
        return not_owned_by_run("ConfigMap", ns, cm_name, name_of(run));
    }
  }
  StartedJob job{name_of(plan.job), "", std::nullopt};
  kube::Result<Json> created = client_->create(res::kJobs, ns, plan.job);
  if (created.ok()) {
    job.created_at = clock_();
    count_write(kWriteJobCreate);
  } else if (created.is(ErrorKind::kAlreadyExists)) {
    created = client_->get(res::kJobs, ns, job.name);
    if (created.ok() && !owned_by(created.value(), run_uid)) {
      return not_owned_by_run("Job", ns, job.name, name_of(run));
    }
  }
  if (!created.ok()) return std::move(created).error();
  job.uid = string_at(created.value(), "metadata/uid");
  Json seen = std::move(created).value();
  project_job(seen);  // the same shape the cache keeps
  overlay_.put(kOverlayJobs, std::move(seen));
  return job;
}

// Each orphan as the caches show it (observe_run is pure).
std::vector<OrphanRun> AgentReconciler::observe_orphans(const std::string& ns,
                                                        const std::vector<Json>& runs,
                                                        TimePoint now) {
  std::vector<OrphanRun> observed;
  observed.reserve(runs.size());
  for (const Json& run : runs) {
    const std::string job_name = job_name_for_run(name_of(run));
    auto job = overlay_.merge(kOverlayJobs, object_key(ns, job_name), view_.job(ns, job_name));
    std::vector<Json> pods =
        pods_of_job(view_.pods_of(ns, name_of(run)),
                    job_uid_of(job ? &*job : nullptr, string_at(run, "status/jobUID")));
    RunObservationInput in;
    in.run = &run;
    in.job = job ? &*job : nullptr;
    for (const Json& p : pods) in.pods.push_back(&p);
    in.admitting_policies = admitting_policies_of(run, in.job);
    in.agent_missing = true;
    in.now = now;
    OrphanRun orphan;
    orphan.run = &run;
    orphan.observed = observe_run(in);
    orphan.has_job = job.has_value();
    orphan.admitting_policies = std::move(in.admitting_policies);
    observed.push_back(std::move(orphan));
  }
  return observed;
}

// One API call; decides nothing (plan_orphans did).
kube::Done AgentReconciler::perform_orphan_step(const std::string& ns, const std::string& name,
                                                const OrphanStep& step, std::vector<Json>& runs,
                                                TimePoint now) {
  switch (step.kind) {
    case OrphanStepKind::kDeleteJob:
      return delete_job(ns, job_name_for_run(step.run));
    case OrphanStepKind::kChargeLedger: {
      std::vector<const Json*> all;
      for (const Json& r : runs) all.push_back(&r);
      return charge_ledger(ns, name, step.record, step.charges, all, step.agent_zone, now);
    }
    case OrphanStepKind::kMarkFinal: {
      Json* run = find_named(runs, step.run);
      HB_ASSERT_MSG(run != nullptr, "a mark names one of the orphans planned");
      HB_TRY(write_run_status(*run, step.status, true));
      spdlog::info("event=run_finished agent={}/{} run={} phase={} reason=AgentNotFound", ns, name,
                   step.run, string_at(step.status, "phase"));
      return kube::done();
    }
    case OrphanStepKind::kDeleteRun: {
      kube::RequestPriorityScope bookkeeping(kube::RequestClass::kBookkeeping);
      HB_TRY(delete_run(ns, step.run));
      spdlog::info("event=run_retention_expired agent={}/{} run={} retention_seconds={}", ns, name,
                   step.run, config_.run_retention.count());
      return kube::done();
    }
  }
  HB_ASSERT_MSG(false, "every orphan step kind is performed above");
  return kube::done();
}

kube::Result<std::optional<TimePoint>> AgentReconciler::tend_orphans(const std::string& ns,
                                                                     const std::string& name,
                                                                     std::vector<Json>& orphans,
                                                                     TimePoint now) {
  if (orphans.empty()) return std::optional<TimePoint>();
  const std::vector<OrphanRun> observed = observe_orphans(ns, orphans, now);
  std::optional<LedgerRecord> record;
  if (orphans_need_ledger(observed)) {
    HB_TRY_ASSIGN(record, ledger_record(ns, name, nullptr, now));
  }
  OrphanPlanInput input;
  input.runs = &observed;
  input.ledger = record ? &*record : nullptr;
  input.retention = config_.run_retention;
  input.now = now;
  const OrphanPlan plan = plan_orphans(input);
  for (const OrphanStep& step : plan.steps) {
    HB_TRY(perform_orphan_step(ns, name, step, orphans, now));
  }
  return plan.next_retention_at;
}

// The Agent is gone or going: forget it; its runs are orphans.
kube::Result<ReconcileResult> AgentReconciler::reconcile_gone(const std::string& ns,
                                                              const std::string& name,
                                                              std::vector<Json>& runs,
                                                              TimePoint now) {
  views_.forget(object_key(ns, name));
  forget_agent(object_key(ns, name));
  if (config_.concurrency) config_.concurrency->withdraw(object_key(ns, name));
  HB_TRY_ASSIGN(const std::optional<TimePoint> due, tend_orphans(ns, name, runs, now));
  return with_retention(ReconcileResult{}, due, now);
}

// Every run observed from the caches and the agent's Lease (observe_run is pure).
AgentReconciler::ObservedRuns AgentReconciler::observe_runs(
    const std::string& ns, const std::string& name, const std::vector<Json>& runs,
    const AgentViews& views, const std::vector<schedule::PolicyBudget>& policies,
    const std::vector<PolicySpec>& selecting, const LedgerRecord* ledger, TimePoint now) {
  const AgentSpec& spec = views.agent->spec.spec;
  RunTimeouts timeouts;
  timeouts.timeout = std::chrono::seconds(spec.timeout_seconds);
  timeouts.grace = std::chrono::seconds(spec.grace_seconds);
  timeouts.stall_window = std::max(config_.job.stall_window, api::kRunStallWindowMin);
  const EffectivePricing pricing = effective_pricing(spec, selecting);
  const std::optional<int64_t> per_run_tokens = effective_per_run_tokens(spec, selecting);
  ObservedRuns observed;
  observed.lease = view_.lease(ns, lease_name_for_agent(name));
  const std::optional<Json>& lease = observed.lease;
  const bool budget_spent = monthly_budget_spent(*views.agent, now, ledger);
  const bool day_spent = daily_budget_spent(spec, now, ledger);
  const schedule::PolicyBudget* cancelling = schedule::cancelling_policy(policies);
  const std::string cancelled_by_policy = cancelling ? schedule::policy_key(*cancelling) : "";
  const schedule::PolicyBudget* stopping = schedule::budget_stopping_policy(policies, now);
  const std::string stopped_by_team_budget = stopping ? schedule::policy_key(*stopping) : "";
  const bool team_budget_daily =
      stopping != nullptr &&
      (stopping->budget_cents <= 0 ||
       schedule::spend_in_current_period(stopping->period, stopping->spent_cents, now) <
           stopping->budget_cents);
  // Only a run that is not final reads when the Lease's version was first seen.
  const bool any_unfinished = std::any_of(views.runs.begin(), views.runs.end(),
                                          [](const auto& run) { return !is_final(run->phase); });
  std::optional<TimePoint> lease_seen_at;
  if (lease && any_unfinished) {
    lease_seen_at = lease_sightings_.seen_at(object_key(ns, name),
                                             string_at(*lease, "metadata/resourceVersion"), now);
  } else {
    lease_sightings_.forget_lease(object_key(ns, name));
  }
  std::vector<std::optional<Json>> jobs;
  std::vector<std::string> going_on;                            // unfinished runs with a Job
  std::vector<std::optional<size_t>> going_on_at(runs.size());  // run i's place in going_on
  for (size_t i = 0; i < runs.size(); ++i) {
    // A settled run decides nothing from its Job or Pods (the cache lets them go).
    if (is_settled(*views.runs[i])) {
      jobs.emplace_back();
      continue;
    }
    const std::string job_name = job_name_for_run(name_of(runs[i]));
    jobs.push_back(overlay_.merge(kOverlayJobs, object_key(ns, job_name), view_.job(ns, job_name)));
    if (jobs.back() && !is_final(views.runs[i]->phase)) {
      going_on_at[i] = going_on.size();
      going_on.push_back(name_of(runs[i]));
    }
  }
  const std::vector<TimePoint> going_on_seen =
      lease_sightings_.runs_seen_at(object_key(ns, name), going_on, now);
  // Money stays held for a run till it is charged (charge_ledger), or gone.
  std::set<std::string> uncharged;
  for (size_t i = 0; i < runs.size(); ++i) {
    if (bool_at(runs[i], "status/costRecorded")) continue;
    uncharged.insert(object_key(ns, name_of(runs[i])));
    restore_budget_hold(runs[i], jobs[i] ? &*jobs[i] : nullptr);
  }
  budget_holds_.keep_only(object_key(ns, name), uncharged);
  for (size_t i = 0; i < runs.size(); ++i) {
    const std::optional<Json>& job = jobs[i];
    const std::vector<Json> pods =
        is_settled(*views.runs[i])
            ? std::vector<Json>{}
            : pods_of_job(view_.pods_of(ns, name_of(runs[i])),
                          job_uid_of(job ? &*job : nullptr, views.runs[i]->job_uid));
    RunObservationInput in;
    in.run = &runs[i];
    in.view = views.runs[i];
    in.job = job ? &*job : nullptr;
    for (const Json& p : pods) in.pods.push_back(&p);
    in.admitting_policies = admitting_policies_of(runs[i], in.job);
    in.lease = lease ? &*lease : nullptr;
    in.lease_seen_at = lease_seen_at;
    in.reported_high = view_.reported_usage(ns, name_of(runs[i]));
    if (going_on_at[i]) in.run_seen_at = going_on_seen[*going_on_at[i]];
    in.timeouts = timeouts;
    in.pricing = pricing.pricing;
    in.pricing_source = pricing.source;
    in.pricing_policy = pricing.policy;
    in.per_run_tokens = per_run_tokens;
    in.provider = spec.provider;
    in.model = spec.model;
    in.bounds = usage_bounds(spec);
    in.budget_exceeded = budget_spent;
    in.daily_budget_exceeded = day_spent;
    in.team_budget_daily = team_budget_daily;
    in.cancelled_by_policy = cancelled_by_policy;
    in.stopped_by_team_budget = stopped_by_team_budget;
    in.pause_allowed = pause_allowed(spec);
    in.archival_claim = spec.archival_claim;
    in.idle_token = idle_token(spec.idle_backoff);
    in.now = now;
    observed.runs.push_back(observe_run(in));
    observed.has_job.push_back(job.has_value());
  }
  return observed;
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

kube::Result<ReconcileResult> AgentReconciler::reconcile(const std::string& ns,
                                                         const std::string& name) {
  if (std::string why = namespace_refusal(ns, config_.own_namespace); !why.empty()) {
    note_refused(ns, name, why);
    return ReconcileResult{};
  }
  const TimePoint now = clock_();
  std::optional<Json> agent_opt = agent(ns, name);
  std::vector<Json> runs = runs_of(ns, name);
  if (!agent_opt || find_path(*agent_opt, "metadata/deletionTimestamp") != nullptr) {
    return reconcile_gone(ns, name, runs, now);
  }
  Json agent = std::move(*agent_opt);
  // Runs of an earlier Agent of this name are never this one's: not
  // adopted, counted, shown in its context or trimmed by its history limits.
  std::vector<Json> orphans = take_runs_of_other_agents(runs, string_at(agent, "metadata/uid"));
  HB_TRY_ASSIGN(const std::optional<TimePoint> orphans_due, tend_orphans(ns, name, orphans, now));
  const AgentViews views = views_.views(object_key(ns, name), agent, runs);

  AgentDecisionInput input;
  input.view = views.agent.get();
  HB_TRY_ASSIGN(input.env.object_in_the_way, object_in_the_way(agent));
  input.now = now;
  input.status_coalesce = config_.status_coalesce;
  HB_TRY_ASSIGN(const std::optional<LedgerRecord> record,
                ledger_record(ns, name, &views.agent->status, now));
  input.ledger = record ? &*record : nullptr;
  if (config_.policies)
    input.policy_budgets = config_.policies->budgets_for(object_key(ns, name), now);
  input.policies = policies_over(ns, name);
  input.runner_image = config_.job.default_image;
  if (config_.provider_holds) {
    input.provider_hold = config_.provider_holds->hold_for(provider_credential(agent), now);
  }
  ObservedRuns observed =
      observe_runs(ns, name, runs, views, input.policy_budgets, input.policies, input.ledger, now);
  input.runs = std::move(observed.runs);
  HB_TRY_ASSIGN(std::optional<Prompt> prompt,
                read_before_deciding(ns, name, agent, *views.agent, runs, input));
  AgentDecision d = decide_agent(input);
  HB_ASSERT_MSG(!config_.concurrency || !d.start_run || d.admission_request,
                "a start is only decided from a snapshot of the gate");
  if (config_.concurrency && d.admission_request && !d.admission_assumed.admitted) {
    config_.concurrency->stand_in_line(*d.admission_request);
  }

  HB_TRY_ASSIGN(const bool current, runs_still_unmarked(ns, d.confirm_unmarked, runs));
  if (!current) return ReconcileResult{std::chrono::milliseconds(1)};  // decide on the newer copy
  if (record && !d.ledger_charges.empty()) {
    std::vector<const Json*> all;
    for (const std::vector<Json>* list : {&runs, &orphans}) {
      for (const Json& r : *list) all.push_back(&r);
    }
    HB_TRY(charge_ledger(ns, name, *record, std::move(d.ledger_charges), all,
                         views.agent->spec.spec.time_zone, now));
  }

  const std::vector<PlannedWrite> plan = plan_writes({.decision = &d,
                                                      .observed = &input.runs,
                                                      .runs = &runs,
                                                      .has_job = std::move(observed.has_job),
                                                      .routine_events = config_.routine_events,
                                                      .now = now});
  // Anything the plan does not class (a read on its behalf, the objects
  // made ahead below) queues as bookkeeping.
  kube::RequestPriorityScope bookkeeping(kube::RequestClass::kBookkeeping);
  kube::GiveWayScope give_way(give_way_time(d, now, steady_()));
  const bool in_the_way = !input.env.object_in_the_way.empty();
  const bool objects_ahead = !in_the_way && views.agent->spec.valid() && !d.start_run;
  if (objects_ahead && only_bookkeeping(plan) &&
      !agent_objects_known_made(agent, &observed.lease)) {
    // Objects first, the rest (the agent's status) in a pass queued behind
    // every other key: a fleet applied at once gets every agent's objects,
    // which its first heartbeat needs, before any agent's first status,
    // which nothing waits for (docs/operator.md, "Five objects per agent").
    HB_TRY(ensure_objects_ahead(agent, observed.lease));  // in the way: that pass reports it
    settle_admissions(object_key(ns, name), ns, d, {}, true);
    return ReconcileResult{kRestOfPassAfter};
  }
  PassWriter writer(*this, agent, views.agent->spec.spec, runs, now);
  writer.prompt = std::move(prompt);
  writer.finals_ahead = final_statuses(plan);
  if (d.admission_assumed.admitted) writer.admission = d.admission_request;
  const PlanOutcome outcome = perform_plan(plan, writer);
  settle_admissions(object_key(ns, name), ns, d, writer.admitted, outcome.start_held_back);
  if (!outcome.completed) return std::move(*writer.error);
  if (outcome.rest_left) return ReconcileResult{kRestOfPassAfter};
  budget_blocked_.record(object_key(ns, name), budget_block_reason(d.status));
  bool found_in_the_way = false;  // by the objects made ahead: decide again at once
  if (objects_ahead) {
    HB_TRY_ASSIGN(found_in_the_way, ensure_objects_ahead(agent, observed.lease));
  }
  bool waits_for_budget = false;
  {
    std::lock_guard lock(mutex_);
    waits_for_budget = waiting_for_budget_.erase(object_key(ns, name)) > 0;
  }
  ReconcileResult result = requeue_for(
      d, now, (outcome.start_held_back && !waits_for_budget) || found_in_the_way, in_the_way);
  if (waits_for_budget) {
    const auto recheck = std::chrono::duration_cast<std::chrono::milliseconds>(kBudgetHoldRecheck);
    result.requeue_after = std::min(result.requeue_after.value_or(recheck), recheck);
  }
  return with_retention(result, orphans_due, now);
}

kube::Result<HoldDecision> AgentReconciler::hold_budget(const Json& agent, const Json& run,
                                                        const AgentSpec& spec,
                                                        double worst_case_cents, TimePoint now) {
  const std::string ns = namespace_of(agent);
  const std::string agent_key = object_key(agent);
  HB_TRY_ASSIGN(const std::optional<LedgerRecord> record,
                ledger_record(ns, name_of(agent), nullptr, now));
  AgentBudgetFigures own{spec.monthly_budget_cents, 0, spec.daily_budget_cents, 0};
  if (record) {
    own.spent_month_cents = spend_in(*record, schedule::spend_period(now)).cents;
    own.spent_today_cents = spend_on_day(*record, schedule::spend_day(now, spec.time_zone));
  }
  const std::vector<schedule::PolicyBudget> teams =
      config_.policies ? config_.policies->budgets_for(agent_key, now)
                       : std::vector<schedule::PolicyBudget>{};
  if (!budget_holds_.restored()) restore_budget_holds();
  return budget_holds_.take(object_key(run), agent_key, budget_rooms(agent_key, own, teams),
                            worst_case_cents);
}

void AgentReconciler::restore_budget_hold(const Json& run, const Json* job) {
  if (job == nullptr || !job_of_run(*job, run) || bool_at(run, "status/costRecorded")) return;
  const std::optional<double> held = held_cents_of_job(*job);
  if (!held) return;
  const std::string ns = namespace_of(run);
  const std::string agent_key = object_key(ns, string_at(run, "spec/agentRef/name"));
  budget_holds_.restore(
      object_key(run),
      {agent_key, hold_pools(agent_key, ns, admitting_policies_of(run, job)), *held});
}

void AgentReconciler::restore_budget_holds() {
  view_.for_each_agent([this](const Json& agent) {
    const std::string ns = namespace_of(agent);
    for (const Json& run : view_.runs_of(ns, name_of(agent))) {
      const std::string job_name = job_name_for_run(name_of(run));
      const std::optional<Json> job =
          overlay_.merge(kOverlayJobs, object_key(ns, job_name), view_.job(ns, job_name));
      restore_budget_hold(run, job ? &*job : nullptr);
    }
  });
  budget_holds_.restored_all();
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

kube::Done AgentReconciler::charge_ledger(const std::string& ns, const std::string& name,
                                          LedgerRecord record, std::vector<LedgerCharge> charges,
                                          const std::vector<const Json*>& runs,
                                          const date::time_zone* agent_zone, TimePoint now) {
  // Charged under the policies that admitted the run (the decision read
  // them from its final status) and those selecting the agent now.
  const std::vector<std::string> selecting =
      config_.policies ? config_.policies->policies_selecting(object_key(ns, name))
                       : std::vector<std::string>{};
  for (LedgerCharge& charge : charges) {
    charge.policies.insert(charge.policies.end(), selecting.begin(), selecting.end());
    std::sort(charge.policies.begin(), charge.policies.end());
    charge.policies.erase(std::unique(charge.policies.begin(), charge.policies.end()),
                          charge.policies.end());
  }
  stamp_days(charges, agent_zone, [&](const std::string& policy) {
    return config_.policies ? config_.policies->zone_of(object_key(ns, policy)) : nullptr;
  });
  const auto still_unmarked = [&runs](const std::string& run) {
    return std::any_of(runs.begin(), runs.end(), [&run](const Json* r) {
      return name_of(*r) == run && !bool_at(*r, "status/costRecorded");
    });
  };
  LedgerRecord next = charge_runs(forget_marked(std::move(record), still_unmarked), charges, now);
  kube::RequestPriorityScope lifecycle(kube::RequestClass::kLifecycle);
  HB_TRY(config_.ledger->put(next));
  count_write(kWriteLedger);
  for (const LedgerCharge& charge : charges) budget_holds_.release(object_key(ns, charge.run));
  observe_gen_ai_charges(genai_, view_, ns, name, charges);
  for (const LedgerCharge& charge : charges) {
    spdlog::info("event=ledger_charged agent={}/{} run={} cost_cents={:.6f} policies={}", ns, name,
                 charge.run, charge.cost_cents, policies_annotation(charge.policies));
  }
  return kube::done();
}

// A place the gate reserved for a run this pass did not start (decided
// again without it, held back by an object in the way) is given back at
// once; an agent that starts nothing leaves the line. A pass that failed
// part way keeps its reservation: the retry starts that run.
void AgentReconciler::settle_admissions(const std::string& agent_key, const std::string& ns,
                                        const AgentDecision& d,
                                        const std::set<std::string>& admitted, bool held_back) {
  if (!config_.concurrency) return;
  for (const std::string& run : admitted) {
    if (held_back || d.start_run != run) config_.concurrency->release(object_key(ns, run));
  }
  if (!d.start_run && !d.concurrency_limited) config_.concurrency->withdraw(agent_key);
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

// The per-agent objects (ServiceAccount, Role, RoleBinding, Lease, memory
// ConfigMap) are made when the Agent appears, as bookkeeping, so its first
// heartbeat's dispatch is only the run and the Job. True when an object in
// the way was found (the next pass reports it).
kube::Result<bool> AgentReconciler::ensure_objects_ahead(const Json& agent,
                                                         const std::optional<Json>& lease) {
  kube::set_current_request_priority({kube::RequestClass::kBookkeeping, 0});
  HB_TRY_ASSIGN(const std::string blocking, ensure_agent_objects(agent, &lease));
  if (blocking.empty()) return false;
  std::lock_guard lock(mutex_);
  in_the_way_[object_key(agent)] = {string_at(agent, "metadata/uid"), blocking, steady_()};
  return true;
}

}  // namespace hb::controllers
