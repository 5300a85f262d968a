#include "operator/manager.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <optional>
#include <thread>
#include <vector>

#include "controllers/model/managed_namespaces.h"
#include "controllers/runtime/agent_metrics.h"
#include "controllers/runtime/metrics.h"
#include "controllers/runtime/workqueue.h"
#include "controllers/shell/agent_reconciler.h"
#include "controllers/shell/cluster_cache.h"
#include "controllers/shell/fleet_wiring.h"
#include "controllers/shell/policy_status_writer.h"
#include "kube/kubeconfig.h"
#include "operator/http_routes.h"
#include "operator/leader_election.h"
#include "operator/metrics_auth.h"
#include "operator/metrics_tls.h"
#include "operator/object_refusals.h"
#include "operator/reconcile_workers.h"
#include "operator/tracing.h"
#include "operator/wakeup.h"
#include "operator/wakeup_token.h"

namespace hb::operator_ {

namespace {

using namespace std::chrono_literals;

constexpr const char* kController = "agent";
WakeupBackend wakeup_backend(controllers::AgentReconciler& reconciler) {
  return {[&reconciler](const std::string& ns, const std::string& name) {
            return reconciler.agent(ns, name);
          },
          [&reconciler](const std::string& ns, const controllers::Json& run) {
            return reconciler.create_run(ns, run);
          },
          [&reconciler](const std::string& ns, const std::string& name) {
            return reconciler.get_run(ns, name);
          },
          [&reconciler] { return reconciler.now(); }};
}

// Where the operator runs: $POD_NAMESPACE, else in-cluster the
// ServiceAccount's namespace; "" out of a cluster without it.
std::string own_namespace_of(const Config& config, const kube::ClusterConfig& cluster) {
  if (!config.own_namespace.empty() || cluster.source != "in-cluster") return config.own_namespace;
  return cluster.default_namespace;
}

Config with_own(Config config, std::string own_namespace) {
  config.own_namespace = std::move(own_namespace);
  return config;
}

std::string watched_namespaces(const std::vector<std::string>& namespaces) {
  std::string out;
  for (const std::string& ns : namespaces) out += (out.empty() ? "" : ",") + ns;
  return out.empty() ? "*" : out;
}

// The workers' client (rate-limited as configured); null when no cluster
// configuration could be loaded (logged).
std::shared_ptr<kube::Client> connect(const Config& config, kube::ClusterConfig& cluster) {
  kube::Result<kube::ClusterConfig> loaded = kube::load_default(config.kubeconfig, config.context);
  if (!loaded.ok()) {
    spdlog::error("event=config_error error=\"{}\"", loaded.error().describe());
    return nullptr;
  }
  cluster = std::move(loaded).value();
  kube::ClientOptions options;
  options.qps = config.qps;
  options.burst = config.burst;
  return std::make_shared<kube::Client>(cluster, options);
}

// The elector's own client: no rate limit shared with the workers, and each
// Lease call bounded well under the renew deadline.
std::unique_ptr<LeaderElector> make_elector(const Config& config,
                                            const kube::ClusterConfig& cluster) {
  static_assert(
      valid_lease_timing(kLeaderLeaseDurationDefault, kRenewDeadlineDefault, kRetryPeriodDefault));
  kube::ClientOptions options;
  options.qps = 0;
  options.timeout = kLeaseCallTimeout;
  LeaderElectionConfig le;
  le.lease_namespace = config.leader_election_namespace;
  le.lease_name = config.leader_election_id;
  le.identity = make_identity();
  le.lease_duration = kLeaderLeaseDurationDefault;
  le.renew_deadline = kRenewDeadlineDefault;
  le.retry_period = kRetryPeriodDefault;
  le.wall_clock_offset = config.testing_clock_offset;
  return std::make_unique<LeaderElector>(std::make_shared<kube::Client>(cluster, options), le);
}

// Gauges read when /metrics is scraped: the queue, the workers, leadership
// and the API requests made so far.
void collect_on_render(controllers::Metrics& metrics, const Config& config,
                       const controllers::WorkQueue& queue, const std::atomic<int>& active_workers,
                       const std::function<bool()>& leading, const kube::Client& client) {
  metrics.gauge_set("controller_runtime_max_concurrent_reconciles", {{"controller", kController}},
                    config.workers);
  metrics.on_render([&config, &queue, &active_workers, leading, &client](controllers::Metrics& m) {
    const controllers::WorkQueueStats s = queue.stats();
    const controllers::Labels q = {{"name", kController}};
    m.gauge_set("workqueue_depth", q, static_cast<double>(s.depth));
    m.gauge_set("workqueue_unfinished_work_items", q,
                static_cast<double>(s.processing + s.waiting));
    m.gauge_set("workqueue_adds_total", q, static_cast<double>(s.adds));
    m.gauge_set("workqueue_retries_total", q, static_cast<double>(s.retries));
    m.gauge_set("controller_runtime_active_workers", {{"controller", kController}}, active_workers);
    m.gauge_set("leader_election_master_status", {{"name", config.leader_election_id}},
                leading() ? 1 : 0);
    const kube::RequestCounts& c = client.counts();
    const std::pair<const char*, uint64_t> verbs[] = {
        {"GET", c.get},    {"LIST", c.list},   {"WATCH", c.watch},  {"POST", c.create},
        {"PUT", c.update}, {"PATCH", c.patch}, {"DELETE", c.remove}};
    for (const auto& [verb, count] : verbs) {
      m.gauge_set("rest_client_requests_total", {{"method", verb}}, static_cast<double>(count));
    }
  });
}

// Gauges of the fleet read when /metrics is scraped: each Agent's (up to
// --agent-metrics-max) and the concurrency gate's places.
void collect_fleet_on_render(controllers::Metrics& metrics, const Config& config,
                             const controllers::ClusterCache& cache,
                             const std::string& own_namespace,
                             std::shared_ptr<const controllers::ConcurrencyGate> gate) {
  metrics.on_render([&cache, &config, &own_namespace](controllers::Metrics& m) {
    std::vector<controllers::AgentMetricRow> rows;
    // Above the bound nothing is exported, so nothing is copied either.
    if (cache.agent_count() <= config.agent_metrics_max) {
      const auto now = std::chrono::system_clock::now();
      cache.for_each_agent([&rows, now, &own_namespace](const controllers::Json& agent) {
        // An Agent in a namespace never managed is not the operator's to show.
        const std::string ns = controllers::namespace_of(agent);
        if (!controllers::namespace_refusal(ns, own_namespace).empty()) return;
        rows.push_back(controllers::agent_metric_row(agent, now));
      });
    }
    controllers::export_agent_metrics(m, rows, config.agent_metrics_max);
  });
  metrics.on_render([gate = std::move(gate)](controllers::Metrics& m) {
    m.gauge_set("heartbeat_concurrent_runs", {}, static_cast<double>(gate->in_use()));
    m.gauge_set("heartbeat_runs_waiting_for_place", {}, static_cast<double>(gate->waiting()));
  });
}

// Syncs the caches, then (with leader election) takes the Lease and fences
// every write of the workers' client with it. An exit code when the manager
// must end instead (no sync; stopped before it led).
std::optional<int> sync_then_acquire(controllers::ClusterCache& cache, const Config& config,
                                     const kube::ClusterConfig& cluster, kube::Client& client,
                                     std::unique_ptr<LeaderElector>& elector,
                                     std::atomic<bool>& leader, const std::atomic<bool>& stop) {
  cache.start();
  // Synced before the Lease is taken, so renewals start with the term (a
  // slow sync after acquiring would outlast the renew deadline).
  if (!cache.wait_for_sync_while_listing(kCacheSyncStall)) {
    spdlog::error("event=cache_sync_stalled seconds={}", kCacheSyncStall.count());
    cache.stop();
    return kExitStartup;
  }
  spdlog::info("event=caches_synced agents={}", cache.agent_count());
  if (!config.leader_elect) return std::nullopt;
  elector = make_elector(config, cluster);
  client.set_write_gate([&elector] { return elector->holding(); });
  if (!elector->acquire(stop)) {
    cache.stop();
    return kExitOk;
  }
  leader = true;
  return std::nullopt;
}

// Runs until `stop` or lost leadership; the exit code.
int lead_until_stopped(LeaderElector* elector, const std::atomic<bool>& stop) {
  if (!elector) {
    while (!stop) std::this_thread::sleep_for(100ms);
    return kExitOk;
  }
  // client-go's OnStoppedLeading: exit at once (the Deployment restarts
  // this replica as a standby), without waiting for a hung renew call.
  const auto exit_now = [] {
    spdlog::default_logger()->flush();
    std::_Exit(kExitLostLeadership);
  };
  return elector->hold(stop, exit_now) ? kExitOk : kExitLostLeadership;
}

// The metrics listener's TLS (null with --metrics-secure=false), and the
// cert dir's reloader. Made before anything else, so a bad cert dir stops the
// start at once, naming the file. False when it could not be made (logged).
bool load_metrics_tls(const Config& config, std::shared_ptr<http::ServerTls>& tls,
                      std::unique_ptr<CertDirReloader>& reloader) {
  if (!config.metrics_secure) return true;
  kube::Result<std::shared_ptr<http::ServerTls>> loaded = metrics_tls(config);
  if (!loaded.ok()) {
    spdlog::error("event=config_invalid error=\"{}: {}\"",
                  config.metrics_cert_dir.empty() ? "--metrics-secure" : "--metrics-cert-dir",
                  loaded.error().describe());
    return false;
  }
  tls = std::move(loaded).value();
  if (!config.metrics_cert_dir.empty()) {
    reloader = std::make_unique<CertDirReloader>(config.metrics_cert_dir, tls);
  }
  spdlog::info("event=metrics_tls certificate={}",
               config.metrics_cert_dir.empty() ? "self-signed" : config.metrics_cert_dir);
  return true;
}

// The operator's spans (operator/tracing.h): null when no endpoint is set.
// The reconciler queues a span per started heartbeat; /metrics reads the
// exporter's counts.
std::unique_ptr<OperatorTracing> start_tracing(const Config& config,
                                               const std::string& own_namespace,
                                               controllers::ReconcilerConfig& reconciler_config,
                                               controllers::Metrics& metrics) {
  std::optional<otlp::ExporterConfig> trace_config =
      operator_trace_config(config.otel_endpoint, [](const char* name) {
        const char* value = std::getenv(name);
        return value ? std::optional<std::string>(value) : std::nullopt;
      });
  if (!trace_config) return nullptr;
  for (const std::string& warning : trace_config->warnings) {
    spdlog::warn("event=otel_config_warning warning=\"{}\"", warning);
  }
  auto tracing = std::make_unique<OperatorTracing>(std::move(*trace_config), own_namespace);
  reconciler_config.export_span = [t = tracing.get()](otlp::Span span) {
    t->offer(std::move(span));
  };
  metrics.on_render([t = tracing.get()](controllers::Metrics& m) { t->export_metrics(m); });
  return tracing;
}

}  // namespace

int run_manager(const Config& config, const std::atomic<bool>& stop) {
  std::shared_ptr<http::ServerTls> metrics_tls;
  std::unique_ptr<CertDirReloader> cert_reloader;
  if (!load_metrics_tls(config, metrics_tls, cert_reloader)) return kExitConfig;
  kube::ClusterConfig cluster;
  std::shared_ptr<kube::Client> client = connect(config, cluster);
  if (!client) return kExitConfig;
  const std::string own_namespace = own_namespace_of(config, cluster);
  if (const std::string refused = refused_watch_namespaces(with_own(config, own_namespace));
      !refused.empty()) {
    spdlog::error("event=config_invalid error=\"{}\"", refused);
    return kExitConfig;
  }
  spdlog::info(
      "event=starting cluster=\"{}\" namespace={} workers={} leader_elect={} "
      "max_concurrent_runs={}",
      cluster.source, watched_namespaces(config.watch_namespaces), config.workers,
      config.leader_elect, config.max_concurrent_runs);

  controllers::Metrics metrics;
  controllers::describe_operator_metrics(metrics);
  controllers::WorkQueue queue;
  const auto enqueue = [&queue](const std::string& key) { queue.add(key); };
  // Made before the cache and gone after it: the informers report to it.
  ObjectRefusalReporter refusals(client, metrics, [] { return std::chrono::system_clock::now(); });
  controllers::CacheOptions cache_options;
  cache_options.on_refused = [&refusals](const kube::RefusedObject& r) { refusals.report(r); };
  cache_options.namespaces = config.watch_namespaces;
  cache_options.watch_timeout_seconds = config.watch_timeout_seconds;
  controllers::ReconcilerConfig reconciler_config;
  // The durable ledger lives where the operator runs (its Lease's
  // namespace out of a cluster): never a managed namespace.
  const controllers::FleetParts fleet = controllers::wire_fleet(
      config.max_concurrent_runs, std::chrono::steady_clock::now, enqueue, client,
      own_namespace.empty() ? config.leader_election_namespace : own_namespace, cache_options,
      reconciler_config);
  const std::shared_ptr<controllers::ConcurrencyGate>& gate = fleet.gate;
  auto provider_holds = std::make_shared<controllers::ProviderHolds>(enqueue);
  cache_options.provider_holds = provider_holds;
  reconciler_config.provider_holds = provider_holds;
  controllers::ClusterCache cache(client, std::move(cache_options), enqueue);
  reconciler_config.job = config.job;
  reconciler_config.routine_events = config.routine_events;
  reconciler_config.status_coalesce = config.status_coalesce;
  reconciler_config.run_retention = config.run_retention;
  reconciler_config.own_namespace = own_namespace;
  const std::unique_ptr<OperatorTracing> tracing =
      start_tracing(config, own_namespace, reconciler_config, metrics);
  controllers::AgentReconciler reconciler(client, cache, reconciler_config, metrics);
  std::atomic<bool> leader{!config.leader_elect};
  std::atomic<int> active_workers{0};
  collect_on_render(
      metrics, config, queue, active_workers, [&leader] { return leader.load(); }, *client);
  collect_fleet_on_render(metrics, config, cache, own_namespace, gate);

  const auto get_secret = [&client](const std::string& ns, const std::string& name) {
    return client->get(kube::resources::kSecrets, ns, name);
  };
  WakeupToken cluster_token(wakeup_token_reader(get_secret, config.leader_election_namespace,
                                                config.wakeup_token_secret));
  NamespaceTokens namespace_tokens(
      namespace_token_reader(get_secret, own_namespace, [&config](const auto& ns) {
        const auto& watched = config.watch_namespaces;
        return watched.empty() || std::find(watched.begin(), watched.end(), ns) != watched.end();
      }));
  std::unique_ptr<LeaderElector> elector;  // made once the servers listen
  const auto is_leader = [&] { return leader.load() && (!elector || elector->holding()); };
  WakeupService wakeup(wakeup_backend(reconciler),
                       WakeupAuth{[&](const std::string& ns) { return namespace_tokens.get(ns); },
                                  [&]() -> std::optional<TokenDigest> {
                                    if (config.wakeup_token_secret.empty()) return std::nullopt;
                                    const std::optional<std::string> t = cluster_token.get();
                                    if (!t) return std::nullopt;
                                    return token_digest(*t);
                                  }},
                       enqueue, is_leader);
  MetricsAuthorizer metrics_auth(
      [&client](const controllers::Json& body) {
        return client->create(kube::resources::kTokenReviews, "", body);
      },
      [&client](const controllers::Json& body) {
        return client->create(kube::resources::kSubjectAccessReviews, "", body);
      });

  const Endpoints endpoints{config.metrics_address, config.health_address, config.wakeup_address};
  RouteHandlers handlers{
      [&metrics] { return metrics.render(); }, [&cache] { return cache.synced(); },
      [&wakeup](const http::ServerRequest& r) { return wakeup.handle(r); }, nullptr};
  if (config.metrics_auth) {
    handlers.metrics_gate = [&metrics_auth](const http::ServerRequest& r) {
      return metrics_auth.refusal(r);
    };
  }
  std::vector<std::unique_ptr<http::Server>> servers;
  try {
    servers = start_servers(endpoints, handlers, metrics_tls);
  } catch (const std::exception& e) {
    spdlog::error("event=listen_failed error=\"{}\"", e.what());
    return kExitStartup;
  }

  if (std::optional<int> code =
          sync_then_acquire(cache, config, cluster, *client, elector, leader, stop)) {
    return *code;
  }

  const ReconcileWorkerDeps worker_deps{
      queue,
      [&reconciler](const std::string& ns, const std::string& name) {
        return reconciler.reconcile(ns, name);
      },
      metrics, kController, active_workers};
  std::vector<std::thread> workers = start_reconcile_workers(config.workers, worker_deps);
  controllers::PolicyStatusWriter policy_status(
      client, *fleet.policies, [gate] { return gate->started_by_agent(); }, metrics,
      [] { return std::chrono::system_clock::now(); });
  policy_status.set_own_namespace(own_namespace);
  std::atomic<bool> policy_status_stop{false};
  std::thread policy_status_thread([&] { policy_status.run_until(policy_status_stop); });
  const int exit_code = lead_until_stopped(elector.get(), stop);
  policy_status_stop = true;
  policy_status_thread.join();
  spdlog::info("event=shutting_down reason={}",
               exit_code == kExitOk ? "signal" : "lost_leadership");
  queue.shutdown();
  for (std::thread& t : workers) t.join();
  if (tracing) tracing->shutdown();  // the last spans, within the export timeout
  leader = false;
  if (elector && exit_code == kExitOk) elector->release();
  cache.stop();
  for (auto& s : servers) s->stop();
  spdlog::info("event=stopped");
  return exit_code;
}

}  // namespace hb::operator_
