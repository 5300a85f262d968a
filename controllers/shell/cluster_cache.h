// Informers (reflector + store) for Agents, HeartbeatRuns, HeartbeatPolicies and the
// label-selected Jobs, Pods and Leases the operator made, with indexes by
// agent and by run, and a mapping of every change to the agent key
// ("ns/name") whose reconcile it concerns. Watching several namespaces takes
// one informer per namespace and resource (a namespaced Role grants no
// cluster-wide list), merged behind the same lookups.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>

#include "controllers/run/pod_tombstones.h"
#include "controllers/shell/agent_source.h"
#include "controllers/shell/cluster_view.h"
#include "controllers/shell/policy_index.h"
#include "controllers/shell/provider_holds.h"
#include "controllers/shell/run_index.h"
#include "kube/informer.h"

namespace hb::controllers {

// start() lists the Agents before the rest (the runs' list reads their
// contextRuns) while their pages keep coming, up to this long without one.
inline constexpr std::chrono::seconds kAgentsListFirstWaitSeconds{10};

struct CacheOptions {
  std::vector<std::string> namespaces;  // empty = all namespaces
  // The server ends each watch after this long; it is reopened from its
  // resourceVersion (events arrive as they happen meanwhile).
  int watch_timeout_seconds = 290;
  // start() waits for the Agents' list while a page comes within this.
  std::chrono::milliseconds agents_first_stall = kAgentsListFirstWaitSeconds;
  // How long deleted Pods' last states are kept is measured on this clock.
  std::function<PodTombstones::Clock::time_point()> steady_now = PodTombstones::Clock::now;
  // Told a run as stored (null: deleted) and whether its Job exists, by run
  // key ("ns/name"), after each change of either; the concurrency gate
  // counts the fleet's started runs from it.
  std::function<void(const std::string& run_key, const Json* run, bool has_job)> observe_run;
  // Kept from a HeartbeatPolicy informer (an optional resource: the cache
  // syncs without the CRD) and from the Agent informer (a policy's running
  // runs are the concurrency gate's count); null: no policies are watched.
  std::shared_ptr<PolicyIndex> policies;
  // Kept from the Agent and run informers; null: no provider quota holds.
  std::shared_ptr<ProviderHolds> provider_holds;
  // Told of each object an informer refuses (kube::InformerOptions); null:
  // only the informer's warning line.
  std::function<void(const kube::RefusedObject&)> on_refused;
};

class ClusterCache final : public ClusterView {
 public:
  using Enqueue = std::function<void(const std::string& agent_key)>;
  // Makes the cache of one resource; the default is an Informer over `client`.
  using SourceFactory = std::function<std::unique_ptr<kube::CachedResource>(
      const kube::Resource&, const kube::InformerOptions&)>;
  ClusterCache(std::shared_ptr<kube::Client> client, CacheOptions options, Enqueue enqueue);
  ClusterCache(SourceFactory make_source, CacheOptions options, Enqueue enqueue);
  ~ClusterCache() override;

  void start();
  void stop();
  // Waits while the lists make progress: false only when `stall` passes
  // with no informer synced or listing an item (at 10,000 agents the first
  // lists of 160,000 runs take minutes; a fixed deadline failed the start).
  bool wait_for_sync_while_listing(std::chrono::milliseconds stall) const;

  std::optional<Json> agent(const std::string& ns, const std::string& name) const override;
  void for_each_agent(const std::function<void(const Json&)>& fn) const override;
  std::size_t agent_count() const;  // without copying them
  std::vector<Json> runs_of(const std::string& ns, const std::string& agent) const override;
  std::optional<Json> job(const std::string& ns, const std::string& name) const override;
  std::vector<Json> jobs_awaiting_run(const std::string& ns,
                                      const std::string& agent) const override;
  // Live Pods plus the last state of deleted ones whose run is not settled.
  std::vector<Json> pods_of(const std::string& ns, const std::string& run) const override;
  std::optional<Json> lease(const std::string& ns, const std::string& name) const override;
  std::optional<UsageCounts> reported_usage(const std::string& ns,
                                            const std::string& run) const override;
  bool synced() const override;

  std::vector<const kube::CachedResource*> sources() const;

 private:
  // One resource's informers: one for all namespaces, or one per namespace.
  struct InformerSet {
    std::vector<std::string> namespaces;  // parallel to `informers`; {""} = all
    std::vector<std::unique_ptr<kube::CachedResource>> informers;
    const kube::CachedResource* in(const std::string& ns) const;  // nullptr: not watched
    kube::CachedResource* in(const std::string& ns);
    void set_handlers(const kube::StoreHandlers& handlers);
  };
  using KeyOf = std::function<std::string(const Json&)>;
  void make_informers(const SourceFactory& make_source, const CacheOptions& options);
  // Handlers that queue the agent `key_of` names ("" : none) on every change.
  kube::StoreHandlers enqueue_handlers(const KeyOf& key_of);
  kube::StoreHandlers policy_handlers() const;
  kube::StoreHandlers own_agent_handlers();
  kube::StoreHandlers run_handlers();
  kube::StoreHandlers job_handlers();
  kube::StoreHandlers pod_handlers();
  kube::StoreHandlers lease_handlers();
  // A run added or changed: indexed, its window and place told, its agent queued.
  void run_seen(const Json& run);
  // The Agents as stored, for the indexes that read them on demand.
  AgentSource agent_source() const;
  void forget_pods_of(const std::string& run_key);
  // Indexes (or, `gone` or handed to its run, forgets) a Job awaiting its run.
  void note_job_awaiting_run(const Json& job, bool gone);
  // Reads the run and its Job from the caches and tells observe_run_ (and
  // the provider holds) where the run stands.
  void tell_run_place(const std::string& ns, const std::string& run_name);
  // The same, for a run its own handler holds (`run`; nullptr: deleted):
  // not read back out of the store on every run event.
  void tell_run_place(const std::string& ns, const std::string& run_name, const Json* run);
  void tell_place_locked(const std::string& ns, const std::string& run_name, const Json* run);
  // Records the run (or its removal); true when it has just become settled.
  bool index_run(const std::string& agent_key, const std::string& run_name, const Json* run);
  // What a Lease's usage report brought: none (no report of a run of the
  // agent going on), a raise of that run's high-water mark, or the same.
  enum class ReportNews { kNone, kRaised, kSame };
  // Raises the high-water mark of the run the Lease's usage report names.
  ReportNews note_usage_report(const Json& lease);
  static std::string agent_key_of_run(const Json& run);
  // The runs' projection: drops a settled run's output past its agent's
  // context window (run_index.h).
  void keep_output_in_window(Json& run);
  // The runs' list pass: a run listed after others of its agent can push
  // one of them out of the window (listed_output_windows.h).
  class RunListPass;
  std::unique_ptr<kube::ListPass> make_run_list_pass() const;
  std::optional<int> context_runs_of_agent(const std::string& agent_key) const;
  // An agent's contextRuns as it now is (or gone): the window follows.
  void window_changed(const Json& agent, bool deleted);
  // Reprojects the agent's runs whose output is kept past the window.
  void drop_outputs_past_window(const std::string& ns, const std::string& agent_key);
  // Whether the run a Job or Pod belongs to (by its annotations) is settled.
  bool owner_run_settled(const Json& object) const;
  // The run's Pods the Pod cache holds (its Job's, by name).
  std::vector<Json> live_pods_of(const std::string& ns, const std::string& run_name) const;
  // Drops the settled run's Job and Pods from the caches.
  void drop_objects_of(const std::string& ns, const std::string& run_name);
  std::vector<Json> lookup(const InformerSet& set, const std::string& ns,
                           const std::vector<std::string>& keys) const;

  Enqueue enqueue_;
  std::function<void(const std::string&, const Json*, bool)> observe_run_;
  std::mutex place_mutex_;  // orders observe_run_ calls: the last reads the newest
  std::function<PodTombstones::Clock::time_point()> steady_now_;
  std::chrono::milliseconds agents_first_stall_;
  std::vector<InformerSet*> all_sets();
  std::vector<const InformerSet*> all_sets() const;

  std::shared_ptr<PolicyIndex> policy_index_;
  std::shared_ptr<ProviderHolds> provider_holds_;
  InformerSet agents_, runs_, jobs_, pods_, leases_, policies_;
  mutable std::mutex mutex_;
  RunIndex runs_by_agent_;  // the Jobs and Pods of settled runs are not kept
  // The highest usage each run going on reported on any Lease version seen
  // ("ns/run"), field by field: a Lease rewritten lower does not lower the
  // charge. Only runs indexed and not settled; dropped when they settle.
  std::map<std::string, UsageCounts, std::less<>> reported_high_;
  // The Jobs awaiting their run (run_after_job.h), by agent key ("ns/agent").
  std::map<std::string, std::set<std::string>> jobs_awaiting_run_;
  // Deleted Pods' last states until their run's cost is recorded ("ns/run").
  PodTombstones tombstones_;
};

}  // namespace hb::controllers
