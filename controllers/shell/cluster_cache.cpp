#include "controllers/shell/cluster_cache.h"

#include <algorithm>
#include <utility>

#include "api/usage_report.h"
#include "controllers/model/agent_spec.h"
#include "controllers/model/names.h"
#include "controllers/model/run_view.h"
#include "controllers/pod/job_builder.h"
#include "controllers/run/cache_projection.h"
#include "controllers/run/run_after_job.h"
#include "controllers/shell/listed_output_windows.h"

namespace hb::controllers {

namespace {

// Wraps the handlers so that `told` (the object, and whether it is gone)
// runs before each.
void tell_first(kube::StoreHandlers& h, std::function<void(const Json&, bool gone)> told) {
  h.on_add = [add = h.on_add, told](const Json& o) {
    told(o, false);
    add(o);
  };
  h.on_update = [update = h.on_update, told](const Json& old, const Json& o) {
    told(o, false);
    update(old, o);
  };
  h.on_delete = [del = h.on_delete, told](const Json& o) {
    told(o, true);
    del(o);
  };
}

// Each informer synced, one deadline for all; false at the first that is not.
template <typename Informers>
bool wait_all_synced(const Informers& informers, std::chrono::steady_clock::time_point deadline) {
  for (const auto& informer : informers) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (!informer->wait_for_sync(std::max(left, std::chrono::milliseconds(0)))) return false;
  }
  return true;
}

// Each informer synced, for as long as their lists make progress: false once
// `stall` passes with none of them synced or listing an item.
template <typename Informers>
bool wait_all_synced_while_listing(const Informers& informers, std::chrono::milliseconds stall) {
  auto progress = [&informers] {
    uint64_t items = 0, synced = 0;
    for (const auto& informer : informers) {
      items += informer->items_listed();
      synced += informer->has_synced() ? 1 : 0;
    }
    return items + synced;
  };
  for (uint64_t seen = progress();;) {
    if (wait_all_synced(informers, std::chrono::steady_clock::now() + stall)) return true;
    const uint64_t now = progress();
    if (now == seen) return false;
    seen = now;
  }
}

std::string owner_agent(const Json& object) {
  const Json* owners = find_path(object, "metadata/ownerReferences");
  if (owners == nullptr || !owners->is_array()) return "";
  for (const Json& o : *owners) {
    if (string_at(o, "kind") == kAgentKind) return string_at(o, "name");
  }
  return "";
}

std::string annotation(const Json& object, std::string_view key) {
  return std::string(annotation_at(object, key));
}

}  // namespace

ClusterCache::ClusterCache(std::shared_ptr<kube::Client> client, CacheOptions options,
                           Enqueue enqueue)
    : ClusterCache(
          [client](const kube::Resource& r, const kube::InformerOptions& o) {
            return std::make_unique<kube::Informer>(client, r, o);
          },
          std::move(options), std::move(enqueue)) {}

ClusterCache::ClusterCache(SourceFactory make_source, CacheOptions options, Enqueue enqueue)
    : enqueue_(std::move(enqueue)),
      observe_run_(std::move(options.observe_run)),
      steady_now_(options.steady_now),
      agents_first_stall_(options.agents_first_stall),
      policy_index_(std::move(options.policies)),
      provider_holds_(std::move(options.provider_holds)) {
  make_informers(make_source, options);
  agents_.set_handlers(own_agent_handlers());
  runs_.set_handlers(run_handlers());
  jobs_.set_handlers(job_handlers());
  pods_.set_handlers(pod_handlers());
  leases_.set_handlers(lease_handlers());
  if (policy_index_) policies_.set_handlers(policy_handlers());
  if (provider_holds_) provider_holds_->read_agents_from(agent_source());
  if (policy_index_) policy_index_->read_agents_from(agent_source());
}

void ClusterCache::make_informers(const SourceFactory& make_source, const CacheOptions& options) {
  const std::string selector = std::string(kLabelManagedBy) + "=" + kManagedByValue;
  const std::vector<std::string> namespaces =
      options.namespaces.empty() ? std::vector<std::string>{""} : options.namespaces;
  auto make = [&](const kube::Resource& r, const std::string& label_selector,
                  kube::Projection projection = nullptr, bool optional = false,
                  kube::ListPassFactory list_pass = nullptr,
                  std::shared_ptr<const kube::TextCut> text_cut = nullptr) {
    InformerSet set;
    for (const std::string& ns : namespaces) {
      kube::InformerOptions o;
      o.namespace_ = ns;
      o.label_selector = label_selector;
      o.watch_timeout_seconds = options.watch_timeout_seconds;
      o.projection = projection;
      o.list_pass = list_pass;
      o.text_cut = text_cut;
      o.optional_resource = optional;
      o.on_refused = options.on_refused;
      set.namespaces.push_back(ns);
      set.informers.push_back(make_source(r, o));
    }
    return set;
  };
  agents_ = make(kube::resources::kAgents, "");
  runs_ = make(
      kube::resources::kHeartbeatRuns, "",
      [this](Json& o) {
        project_run(o);
        keep_output_in_window(o);
      },
      /*optional=*/false, [this] { return make_run_list_pass(); });
  // Jobs and Pods are kept as projected (cache_projection.h): their
  // templates, specs and the run's context document are nearly all of their
  // size, and nothing here reads them. Those of settled runs are not kept:
  // nothing decides from them any more (a settled run holds no place).
  // Their events' text is cut to what the projections read before it is
  // parsed (job_text_cut, pod_text_cut).
  auto unless_settled = [this](void (*project)(Json&)) {
    return [this, project](Json& o) {
      if (owner_run_settled(o)) {
        o = nullptr;
        return;
      }
      project(o);
    };
  };
  jobs_ = make(kube::resources::kJobs, selector, unless_settled(project_job), false, nullptr,
               job_text_cut());
  pods_ = make(kube::resources::kPods, selector, unless_settled(project_pod), false, nullptr,
               pod_text_cut());
  leases_ = make(kube::resources::kLeases, selector);
  if (policy_index_) {
    policies_ = make(kube::resources::kHeartbeatPolicies, "", nullptr, /*optional=*/true);
  }
}

kube::StoreHandlers ClusterCache::enqueue_handlers(const KeyOf& key_of) {
  kube::StoreHandlers h;
  h.on_add = [this, key_of](const Json& o) {
    if (auto k = key_of(o); !k.empty()) enqueue_(k);
  };
  h.on_update = [this, key_of](const Json&, const Json& o) {
    if (auto k = key_of(o); !k.empty()) enqueue_(k);
  };
  h.on_delete = [this, key_of](const Json& o) {
    if (auto k = key_of(o); !k.empty()) enqueue_(k);
  };
  h.update_reads_old = false;  // nor do the handlers put before these (tell_first)
  return h;
}

kube::StoreHandlers ClusterCache::policy_handlers() const {
  kube::StoreHandlers h;
  h.on_add = [index = policy_index_](const Json& o) { index->policy_changed(nullptr, &o); };
  h.on_update = [index = policy_index_](const Json& old, const Json& o) {
    index->policy_changed(&old, &o);
  };
  h.on_delete = [index = policy_index_](const Json& o) { index->policy_changed(&o, nullptr); };
  return h;
}

kube::StoreHandlers ClusterCache::own_agent_handlers() {
  kube::StoreHandlers h = enqueue_handlers([](const Json& o) { return object_key(o); });
  // Before the agent is queued: its runs' outputs past its window go first.
  tell_first(h, [this](const Json& o, bool gone) { window_changed(o, gone); });
  if (policy_index_ || provider_holds_) {
    // Told before the agent is queued, so its reconcile sees its labels,
    // spend and credential counted.
    tell_first(h, [index = policy_index_, holds = provider_holds_](const Json& o, bool gone) {
      if (index) index->agent_changed(object_key(o), gone ? nullptr : &o);
      if (holds) holds->agent_changed(object_key(o), gone ? nullptr : &o);
    });
  }
  return h;
}

void ClusterCache::run_seen(const Json& run) {
  const std::string agent_key = agent_key_of_run(run);
  if (index_run(agent_key, name_of(run), &run)) drop_objects_of(namespace_of(run), name_of(run));
  // A run whose output was dropped is past the window: it pushes none out.
  if (is_settled(run) && !output_dropped(run))
    drop_outputs_past_window(namespace_of(run), agent_key);
  tell_run_place(namespace_of(run), name_of(run), &run);
  enqueue_(agent_key);
}

kube::StoreHandlers ClusterCache::run_handlers() {
  kube::StoreHandlers h;
  h.on_add = [this](const Json& o) { run_seen(o); };
  h.on_update = [this](const Json& old, const Json& o) {
    if (bool_at(o, "status/costRecorded")) forget_pods_of(object_key(o));
    if (agent_key_of_run(old) != agent_key_of_run(o)) {
      index_run(agent_key_of_run(old), name_of(old), nullptr);
      enqueue_(agent_key_of_run(old));
    }
    run_seen(o);
  };
  h.on_delete = [this](const Json& o) {
    forget_pods_of(object_key(o));
    index_run(agent_key_of_run(o), name_of(o), nullptr);
    tell_run_place(namespace_of(o), name_of(o), nullptr);
    enqueue_(agent_key_of_run(o));
  };
  return h;
}

namespace {
// The agent a Job or Pod was made for, by its annotation ("" when none).
std::string named_agent_key(const Json& o) {
  const std::string agent = annotation(o, kAnnotationAgentName);
  return agent.empty() ? std::string() : object_key(namespace_of(o), agent);
}
}  // namespace

kube::StoreHandlers ClusterCache::job_handlers() {
  kube::StoreHandlers h = enqueue_handlers(named_agent_key);
  // A started run's Job comes before its Running status: the gate counts it.
  auto job_run_changed = [this](const Json& o) {
    tell_run_place(namespace_of(o), annotation(o, kAnnotationRunName));
  };
  h.on_add = [this, add = h.on_add, job_run_changed](const Json& o) {
    note_job_awaiting_run(o, false);
    add(o);
    job_run_changed(o);
  };
  h.on_update = [this, update = h.on_update](const Json& old, const Json& o) {
    note_job_awaiting_run(o, false);
    update(old, o);
  };
  h.on_delete = [this, del = h.on_delete, job_run_changed](const Json& o) {
    note_job_awaiting_run(o, true);
    del(o);
    job_run_changed(o);
  };
  return h;
}

void ClusterCache::note_job_awaiting_run(const Json& job, bool gone) {
  const std::string agent_key = named_agent_key(job);
  if (agent_key.empty()) return;
  std::lock_guard lock(mutex_);
  auto& jobs = jobs_awaiting_run_[agent_key];
  if (!gone && awaits_its_run(job)) {
    jobs.insert(object_key(job));
  } else {
    jobs.erase(object_key(job));
  }
  if (jobs.empty()) jobs_awaiting_run_.erase(agent_key);
}

kube::StoreHandlers ClusterCache::pod_handlers() {
  kube::StoreHandlers h = enqueue_handlers(named_agent_key);
  h.on_delete = [this](const Json& o) {
    if (const std::string run = annotation(o, kAnnotationRunName); !run.empty()) {
      std::lock_guard lock(mutex_);
      tombstones_.remember(object_key(namespace_of(o), run), o, steady_now_());
    }
    if (auto k = named_agent_key(o); !k.empty()) enqueue_(k);
  };
  return h;
}

kube::StoreHandlers ClusterCache::lease_handlers() {
  kube::StoreHandlers h = enqueue_handlers([](const Json& o) {
    const std::string agent = owner_agent(o);
    return agent.empty() ? std::string() : object_key(namespace_of(o), agent);
  });
  // Every version's usage report raises the run's high-water mark before
  // the reconcile (which reads only the newest) is queued.
  h.on_add = [this, add = h.on_add](const Json& o) {
    note_usage_report(o);
    add(o);
  };
  // A beat whose report raises nothing only moves renewTime: no pass is
  // queued for it. The run's pass already waits for its stall deadline
  // (run_status.h), and reads the newest beat from the store then.
  h.on_update = [this, update = h.on_update](const Json& old, const Json& o) {
    if (note_usage_report(o) != ReportNews::kSame) update(old, o);
  };
  return h;
}

AgentSource ClusterCache::agent_source() const {
  AgentSource source;
  source.get = [this](const std::string& key) -> std::optional<Json> {
    const kube::CachedResource* informer = agents_.in(namespace_of_key(key));
    if (informer == nullptr) return std::nullopt;
    return informer->store().get(key);
  };
  source.contains = [this](const std::string& key) {
    const kube::CachedResource* informer = agents_.in(namespace_of_key(key));
    return informer != nullptr && informer->store().contains(key);
  };
  source.for_each_in = [this](const std::string& ns, const AgentSource::Visit& visit) {
    const kube::CachedResource* informer = agents_.in(ns);
    if (informer == nullptr) return;
    // One informer may hold every namespace's Agents.
    informer->store().for_each([&](Json&& agent) {
      if (namespace_of(agent) == ns) visit(object_key(agent), agent);
    });
  };
  return source;
}

ClusterCache::~ClusterCache() {
  stop();
}

std::vector<ClusterCache::InformerSet*> ClusterCache::all_sets() {
  return {&agents_, &runs_, &jobs_, &pods_, &leases_, &policies_};
}

std::vector<const ClusterCache::InformerSet*> ClusterCache::all_sets() const {
  return {&agents_, &runs_, &jobs_, &pods_, &leases_, &policies_};
}

void ClusterCache::start() {
  // The Agents first: the runs' list keeps only each agent's window of
  // outputs, and an agent not listed yet keeps all of its runs' until the
  // handlers run (at 10,000 agents with 4,000-byte outputs, 220.8 MiB).
  // Bounded by progress: while the Agents' pages keep coming (10,000 agents
  // are 20 pages, slow on a busy API server) the rest wait; with no API
  // server they start anyway, to retry on their own.
  for (auto& informer : agents_.informers) informer->start();
  wait_all_synced_while_listing(agents_.informers, agents_first_stall_);
  for (InformerSet* set : all_sets()) {
    if (set == &agents_) continue;
    for (auto& informer : set->informers) informer->start();
  }
}

void ClusterCache::stop() {
  for (InformerSet* set : all_sets()) {
    for (auto& informer : set->informers) informer->stop();
  }
}

bool ClusterCache::wait_for_sync_while_listing(std::chrono::milliseconds stall) const {
  return wait_all_synced_while_listing(sources(), stall);
}

bool ClusterCache::synced() const {
  for (auto* i : sources()) {
    if (!i->has_synced()) return false;
  }
  return true;
}

std::vector<const kube::CachedResource*> ClusterCache::sources() const {
  std::vector<const kube::CachedResource*> out;
  for (const InformerSet* set : all_sets()) {
    for (const auto& informer : set->informers) out.push_back(informer.get());
  }
  return out;
}

const kube::CachedResource* ClusterCache::InformerSet::in(const std::string& ns) const {
  for (std::size_t i = 0; i < namespaces.size(); ++i) {
    if (namespaces[i].empty() || namespaces[i] == ns) return informers[i].get();
  }
  return nullptr;
}

kube::CachedResource* ClusterCache::InformerSet::in(const std::string& ns) {
  return const_cast<kube::CachedResource*>(std::as_const(*this).in(ns));
}

void ClusterCache::InformerSet::set_handlers(const kube::StoreHandlers& handlers) {
  for (auto& informer : informers) informer->set_handlers(handlers);
}

bool ClusterCache::index_run(const std::string& agent_key, const std::string& run_name,
                             const Json* run) {
  std::lock_guard lock(mutex_);
  if (run == nullptr || is_settled(*run)) {
    reported_high_.erase(object_key(namespace_of_key(agent_key), run_name));
  }
  if (run == nullptr) {
    runs_by_agent_.erase(agent_key, run_name);
    return false;
  }
  IndexedRun facts;
  facts.settled = is_settled(*run);
  facts.finished_at = time_at(*run, "status/finishedAt").value_or(TimePoint{});
  facts.output_kept = settled_with_output(*run);
  return runs_by_agent_.set(agent_key, run_name, facts);
}

ClusterCache::ReportNews ClusterCache::note_usage_report(const Json& lease) {
  const std::string agent = owner_agent(lease);
  const std::string_view text = annotation_at(lease, api::kAnnotationUsage);
  if (agent.empty() || text.empty()) return ReportNews::kNone;
  const api::DecodedUsageReport decoded = api::decode_usage_report(text);
  if (!decoded.report) return ReportNews::kNone;
  const api::UsageReport& r = *decoded.report;
  const UsageCounts counts = usage_counts(r);
  const std::string ns = namespace_of(lease);
  std::lock_guard lock(mutex_);
  // Only a run of this agent going on: a report naming anything else would
  // grow the map without bound.
  if (!runs_by_agent_.unsettled(object_key(ns, agent), r.run)) return ReportNews::kNone;
  auto [it, added] = reported_high_.try_emplace(object_key(ns, r.run), counts);
  if (added) return ReportNews::kRaised;
  const UsageCounts before = it->second;
  it->second = usage_field_max(before, counts);
  return it->second == before ? ReportNews::kSame : ReportNews::kRaised;
}

std::optional<UsageCounts> ClusterCache::reported_usage(const std::string& ns,
                                                        const std::string& run) const {
  std::lock_guard lock(mutex_);
  auto it = reported_high_.find(object_key(ns, run));
  if (it == reported_high_.end()) return std::nullopt;
  return it->second;
}

std::string ClusterCache::agent_key_of_run(const Json& run) {
  return object_key(namespace_of(run), string_at(run, "spec/agentRef/name"));
}

void ClusterCache::keep_output_in_window(Json& run) {
  if (!settled_with_output(run)) return;
  const std::string agent_key = agent_key_of_run(run);
  const TimePoint finished_at = time_at(run, "status/finishedAt").value_or(TimePoint{});
  bool keep = true;
  {
    std::lock_guard lock(mutex_);
    keep = runs_by_agent_.in_output_window(agent_key, name_of(run), finished_at);
    runs_by_agent_.set_output_kept(agent_key, name_of(run), keep);
  }
  if (!keep) drop_output(run);
}

void ClusterCache::window_changed(const Json& agent, bool deleted) {
  std::optional<int> context_runs;
  if (!deleted) {
    context_runs =
        static_cast<int>(std::clamp<int64_t>(context_runs_of(agent), 0, kContextRunsMax));
  }
  bool lowered = false;
  {
    std::lock_guard lock(mutex_);
    lowered = runs_by_agent_.set_context_runs(object_key(agent), context_runs);
  }
  if (lowered) drop_outputs_past_window(namespace_of(agent), object_key(agent));
}

class ClusterCache::RunListPass final : public kube::ListPass {
 public:
  explicit RunListPass(const ClusterCache& cache) : cache_(cache) {}

  std::vector<std::string> admit(Json& run) override {
    if (!is_settled(run)) return {};
    const std::string agent_key = agent_key_of_run(run);
    const ListedOutputWindows::Admission admission = windows_.admit(
        agent_key, name_of(run), time_at(run, "status/finishedAt").value_or(TimePoint{}),
        cache_.context_runs_of_agent(agent_key));
    if (!admission.in_window) revisit(run);
    if (!admission.pushed_out) return {};
    return {object_key(namespace_of(run), *admission.pushed_out)};
  }
  // As the watch path drops it (keep_output_in_window): only a settled
  // run's non-empty output.
  void revisit(Json& run) override {
    if (settled_with_output(run)) drop_output(run);
  }

 private:
  const ClusterCache& cache_;
  ListedOutputWindows windows_;
};

std::unique_ptr<kube::ListPass> ClusterCache::make_run_list_pass() const {
  return std::make_unique<RunListPass>(*this);
}

std::optional<int> ClusterCache::context_runs_of_agent(const std::string& agent_key) const {
  std::lock_guard lock(mutex_);
  return runs_by_agent_.context_runs(agent_key);
}

void ClusterCache::drop_outputs_past_window(const std::string& ns, const std::string& agent_key) {
  std::vector<std::string> names;
  {
    std::lock_guard lock(mutex_);
    names = runs_by_agent_.outputs_past_window(agent_key);
  }
  // Outside mutex_: the projection takes it (and decides again, on the index as it is then).
  kube::CachedResource* runs = runs_.in(ns);
  if (runs == nullptr) return;
  for (const std::string& name : names) runs->reproject(object_key(ns, name));
}

bool ClusterCache::owner_run_settled(const Json& object) const {
  const std::string agent = annotation(object, kAnnotationAgentName);
  const std::string run = annotation(object, kAnnotationRunName);
  if (agent.empty() || run.empty()) return false;
  const std::string ns = namespace_of(object);
  std::lock_guard lock(mutex_);
  return runs_by_agent_.settled(object_key(ns, agent), run);
}

void ClusterCache::drop_objects_of(const std::string& ns, const std::string& run_name) {
  // Not under mutex_: a store's projection takes it.
  if (kube::CachedResource* jobs = jobs_.in(ns)) {
    jobs->reproject(object_key(ns, job_name_for_run(run_name)));
  }
  if (kube::CachedResource* pod_store = pods_.in(ns)) {
    for (const Json& pod : live_pods_of(ns, run_name)) pod_store->reproject(object_key(pod));
  }
}

std::vector<Json> ClusterCache::live_pods_of(const std::string& ns,
                                             const std::string& run_name) const {
  const kube::CachedResource* informer = pods_.in(ns);
  if (informer == nullptr) return {};
  // Read by name, not kept in an index (a map entry for every run in
  // flight, about 0.3 KB each): the Job controller names a Job's Pods after
  // it, and the ones another run's longer name shares the prefix with are
  // told apart by their run annotation.
  std::vector<Json> pods = informer->store().with_key_prefix(
      object_key(ns, pod_name_prefix_for_job(job_name_for_run(run_name))));
  std::erase_if(pods, [&run_name](const Json& pod) {
    return annotation_at(pod, kAnnotationRunName) != run_name;
  });
  return pods;
}

std::vector<Json> ClusterCache::lookup(const InformerSet& set, const std::string& ns,
                                       const std::vector<std::string>& keys) const {
  const kube::CachedResource* informer = set.in(ns);
  if (informer == nullptr) return {};
  std::vector<Json> out;
  for (const std::string& key : keys) {
    if (auto object = informer->store().get(key)) out.push_back(std::move(*object));
  }
  return out;
}

namespace {
std::optional<Json> get_from(const kube::CachedResource* informer, const std::string& ns,
                             const std::string& name) {
  if (informer == nullptr) return std::nullopt;
  return informer->store().get(object_key(ns, name));
}
}  // namespace

void ClusterCache::tell_run_place(const std::string& ns, const std::string& run_name) {
  if ((!observe_run_ && !provider_holds_) || run_name.empty()) return;
  std::lock_guard lock(place_mutex_);
  const std::optional<Json> run = get_from(runs_.in(ns), ns, run_name);
  tell_place_locked(ns, run_name, run ? &*run : nullptr);
}

void ClusterCache::tell_run_place(const std::string& ns, const std::string& run_name,
                                  const Json* run) {
  if ((!observe_run_ && !provider_holds_) || run_name.empty()) return;
  std::lock_guard lock(place_mutex_);
  tell_place_locked(ns, run_name, run);
}

void ClusterCache::tell_place_locked(const std::string& ns, const std::string& run_name,
                                     const Json* run) {
  const kube::CachedResource* jobs = jobs_.in(ns);
  const std::string job_key = object_key(ns, job_name_for_run(run_name));
  bool has_job = jobs != nullptr && jobs->store().contains(job_key);
  std::optional<Json> carried;
  if (run == nullptr && has_job) {
    // A Job made before its run is that run started: the run it carries
    // holds the place, in its agent's pools (run_after_job.h).
    const std::optional<Json> job = jobs->store().get(job_key);
    has_job = job.has_value();
    if (job && awaits_its_run(*job)) carried = run_carried_by(*job);
    if (carried) run = &*carried;
  }
  if (observe_run_) observe_run_(object_key(ns, run_name), run, has_job);
  if (provider_holds_) provider_holds_->run_changed(object_key(ns, run_name), run);
}

std::optional<Json> ClusterCache::agent(const std::string& ns, const std::string& name) const {
  return get_from(agents_.in(ns), ns, name);
}
void ClusterCache::for_each_agent(const std::function<void(const Json&)>& fn) const {
  for (const auto& informer : agents_.informers) informer->store().for_each(fn);
}
std::size_t ClusterCache::agent_count() const {
  std::size_t count = 0;
  for (const auto& informer : agents_.informers) count += informer->store().size();
  return count;
}
std::vector<Json> ClusterCache::runs_of(const std::string& ns, const std::string& agent) const {
  std::vector<std::string> keys;
  {
    std::lock_guard lock(mutex_);
    keys = runs_by_agent_.names(object_key(ns, agent));
  }
  for (std::string& key : keys) key = object_key(ns, key);
  return lookup(runs_, ns, keys);
}
std::vector<Json> ClusterCache::jobs_awaiting_run(const std::string& ns,
                                                  const std::string& agent) const {
  std::vector<std::string> keys;
  {
    std::lock_guard lock(mutex_);
    auto found = jobs_awaiting_run_.find(object_key(ns, agent));
    if (found == jobs_awaiting_run_.end()) return {};
    keys.assign(found->second.begin(), found->second.end());
  }
  std::vector<Json> jobs = lookup(jobs_, ns, keys);
  std::erase_if(jobs, [](const Json& job) { return !awaits_its_run(job); });
  return jobs;
}
std::optional<Json> ClusterCache::job(const std::string& ns, const std::string& name) const {
  return get_from(jobs_.in(ns), ns, name);
}
std::vector<Json> ClusterCache::pods_of(const std::string& ns, const std::string& run) const {
  std::vector<Json> pods = live_pods_of(ns, run);
  std::lock_guard lock(mutex_);
  std::vector<Json> gone = tombstones_.of(object_key(ns, run), pods);
  pods.insert(pods.end(), std::make_move_iterator(gone.begin()),
              std::make_move_iterator(gone.end()));
  return pods;
}

void ClusterCache::forget_pods_of(const std::string& run_key) {
  std::lock_guard lock(mutex_);
  tombstones_.forget(run_key);
}
std::optional<Json> ClusterCache::lease(const std::string& ns, const std::string& name) const {
  return get_from(leases_.in(ns), ns, name);
}

}  // namespace hb::controllers
