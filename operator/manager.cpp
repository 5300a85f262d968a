#include "operator/manager.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdlib>
#include <map>
#include <thread>
#include <vector>

#include "controllers/runtime/metrics.h"
#include "controllers/runtime/workqueue.h"
#include "controllers/shell/agent_reconciler.h"
#include "controllers/shell/cluster_cache.h"
#include "kube/errors.h"
#include "kube/kubeconfig.h"
#include "operator/leader_election.h"
#include "operator/wakeup.h"
#include "operator/wakeup_token.h"

namespace hb::operator_ {

namespace {

using namespace std::chrono_literals;

std::string watched_namespaces(const std::vector<std::string>& namespaces) {
  std::string out;
  for (const std::string& ns : namespaces) out += (out.empty() ? "" : ",") + ns;
  return out.empty() ? "*" : out;
}
using controllers::Json;

constexpr const char* kController = "agent";

std::pair<std::string, std::string> split_key(const std::string& key) {
  const size_t slash = key.find('/');
  return {key.substr(0, slash), key.substr(slash + 1)};
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

}  // namespace

int run_manager(const Config& config, const std::atomic<bool>& stop) {
  kube::ClusterConfig cluster;
  try {
    cluster = kube::load_default(config.kubeconfig, config.context);
  } catch (const std::exception& e) {
    spdlog::error("event=config_error error=\"{}\"", e.what());
    return kExitConfig;
  }
  kube::ClientOptions client_options;
  client_options.qps = config.qps;
  client_options.burst = config.burst;
  auto client = std::make_shared<kube::Client>(cluster, client_options);
  spdlog::info("event=starting cluster=\"{}\" namespace={} workers={} leader_elect={}",
               cluster.source, watched_namespaces(config.watch_namespaces), config.workers,
               config.leader_elect);

  controllers::Metrics metrics;
  controllers::describe_operator_metrics(metrics);
  controllers::WorkQueue queue;
  controllers::ClusterCache cache(client, {config.watch_namespaces, config.watch_timeout_seconds},
                                  [&queue](const std::string& key) { queue.add(key); });
  controllers::ReconcilerConfig reconciler_config;
  reconciler_config.job = config.job;
  reconciler_config.routine_events = config.routine_events;
  reconciler_config.status_coalesce = config.status_coalesce;
  controllers::AgentReconciler reconciler(client, cache, reconciler_config, metrics);
  std::atomic<bool> leader{!config.leader_elect};
  std::atomic<int> active_workers{0};

  metrics.gauge_set("controller_runtime_max_concurrent_reconciles", {{"controller", kController}},
                    config.workers);
  metrics.on_render([&](controllers::Metrics& m) {
    const controllers::WorkQueueStats s = queue.stats();
    const controllers::Labels q = {{"name", kController}};
    m.gauge_set("workqueue_depth", q, static_cast<double>(s.depth));
    m.gauge_set("workqueue_unfinished_work_items", q,
                static_cast<double>(s.processing + s.waiting));
    m.gauge_set("workqueue_adds_total", q, static_cast<double>(s.adds));
    m.gauge_set("workqueue_retries_total", q, static_cast<double>(s.retries));
    m.gauge_set("controller_runtime_active_workers", {{"controller", kController}}, active_workers);
    m.gauge_set("leader_election_master_status", {{"name", config.leader_election_id}},
                leader ? 1 : 0);
    const kube::RequestCounts& c = client->counts();
    const std::pair<const char*, uint64_t> verbs[] = {
        {"GET", c.get},    {"LIST", c.list},   {"WATCH", c.watch},  {"POST", c.create},
        {"PUT", c.update}, {"PATCH", c.patch}, {"DELETE", c.remove}};
    for (const auto& [verb, count] : verbs) {
      m.gauge_set("rest_client_requests_total", {{"method", verb}}, static_cast<double>(count));
    }
  });

  WakeupToken token([&]() -> std::optional<std::string> {
    if (config.wakeup_token_secret.empty()) return std::nullopt;
    const std::string& ns = config.leader_election_namespace;
    const std::string& name = config.wakeup_token_secret;
    try {
      return wakeup_token_from_secret(client->get(kube::resources::kSecrets, ns, name));
    } catch (const std::exception& e) {
      spdlog::warn("event=wakeup_token_unreadable secret={}/{} error=\"{}\"", ns, name, e.what());
      return std::nullopt;
    }
  });
  std::unique_ptr<LeaderElector> elector;  // made once the servers listen
  const auto is_leader = [&] { return leader.load() && (!elector || elector->holding()); };
  WakeupService wakeup(
      reconciler, [&token] { return token.get(); },
      [&queue](const std::string& key) { queue.add(key); }, is_leader);

  auto handler = [&](const std::string& address) {
    return [&, address](const http::ServerRequest& request) -> http::ServerResponse {
      http::ServerResponse response;
      if (address == config.metrics_address && request.path == "/metrics") {
        response.content_type = "text/plain; version=0.0.4; charset=utf-8";
        response.body = metrics.render();
        return response;
      }
      if (address == config.health_address && request.path == "/healthz") {
        response.body = "ok";
        return response;
      }
      if (address == config.health_address && request.path == "/readyz") {
        if (!cache.synced()) {
          response.status = 503;
          response.body = "caches not synced";
        } else {
          response.body = "ok";
        }
        return response;
      }
      if (address == config.wakeup_address) return wakeup.handle(request);
      response.status = 404;
      response.body = "not found";
      return response;
    };
  };
  std::vector<std::unique_ptr<http::Server>> servers;
  std::map<std::string, bool> bound;
  try {
    for (const std::string& address :
         {config.health_address, config.metrics_address, config.wakeup_address}) {
      if (address.empty() || bound[address]) continue;
      bound[address] = true;
      http::ServerLimits limits;
      // Only the wakeup endpoint takes a body; GETs of metrics and health none.
      limits.body_bytes_max = address == config.wakeup_address ? kWakeupBodyBytesMax : 0;
      servers.push_back(http::make_server(address, handler(address), limits));
      spdlog::info("event=listening address={}", address);
    }
  } catch (const std::exception& e) {
    spdlog::error("event=listen_failed error=\"{}\"", e.what());
    return kExitStartup;
  }

  cache.start();
  // Synced before the Lease is taken, so renewals start with the term (a
  // slow sync after acquiring would outlast the renew deadline).
  if (!cache.wait_for_sync(kCacheSyncTimeout)) {
    spdlog::error("event=cache_sync_timeout seconds={}", kCacheSyncTimeout.count());
    cache.stop();
    return kExitStartup;
  }
  spdlog::info("event=caches_synced agents={}", cache.agents().size());
  int exit_code = kExitOk;
  if (config.leader_elect) {
    elector = make_elector(config, cluster);
    // Every write of the workers' client is fenced by the Lease.
    client->set_write_gate([&elector] { return elector->holding(); });
    if (!elector->acquire(stop)) {
      cache.stop();
      return kExitOk;
    }
    leader = true;
  }

  std::vector<std::thread> workers;
  for (int i = 0; i < config.workers; ++i) {
    workers.emplace_back([&] {
      while (auto key = queue.get()) {
        ++active_workers;
        const auto started = std::chrono::steady_clock::now();
        const auto [ns, name] = split_key(*key);
        std::string result = "success";
        try {
          controllers::ReconcileResult r = reconciler.reconcile(ns, name);
          queue.forget(*key);
          if (r.requeue_after) {
            queue.add_after(*key, *r.requeue_after);
            result = "requeue_after";
          }
        } catch (const std::exception& e) {
          result = "error";
          const auto* api = dynamic_cast<const kube::ApiError*>(&e);
          const bool conflict = api != nullptr && api->kind() == kube::ErrorKind::kConflict;
          if (conflict) {
            spdlog::debug("event=reconcile_conflict agent={} error=\"{}\"", *key, e.what());
          } else {
            spdlog::warn("event=reconcile_failed agent={} error=\"{}\"", *key, e.what());
          }
          metrics.counter_add("controller_runtime_reconcile_errors_total",
                              {{"controller", kController}});
          queue.add_rate_limited(*key);
        }
        metrics.counter_add("controller_runtime_reconcile_total",
                            {{"controller", kController}, {"result", result}});
        metrics.observe(
            "controller_runtime_reconcile_time_seconds", {{"controller", kController}},
            std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
        --active_workers;
        queue.done(*key);
      }
    });
  }

  if (elector) {
    // client-go's OnStoppedLeading: exit at once (the Deployment restarts
    // this replica as a standby), without waiting for a hung renew call.
    const auto exit_now = [] {
      spdlog::default_logger()->flush();
      std::_Exit(kExitLostLeadership);
    };
    if (!elector->hold(stop, exit_now)) exit_code = kExitLostLeadership;
  } else {
    while (!stop) std::this_thread::sleep_for(100ms);
  }
  spdlog::info("event=shutting_down reason={}",
               exit_code == kExitOk ? "signal" : "lost_leadership");
  queue.shutdown();
  for (std::thread& t : workers) t.join();
  leader = false;
  if (elector && exit_code == kExitOk) elector->release();
  cache.stop();
  for (auto& s : servers) s->stop();
  spdlog::info("event=stopped");
  return exit_code;
}

}  // namespace hb::operator_
