// hb_operator_capacity_bench: what one operator core sustains with the
// control plane out of the way. The operator's reconcile core, caches,
// work queue and client (wired as operator/manager.cpp wires them, no rate
// limit) run against the simulation's in-memory API server
// (tests/sim/api_server.h) with a node whose runners all succeed
// (capacity_node.h); every watch event reaches the informers' stores as
// text through their decoder. One thread does everything, and the
// simulated clock moves, while measuring, by the CPU the operator spends:
// one operator core, so the schedule lag is its own queueing. The API
// server answers instantly (its CPU is not counted).
//   hb_operator_capacity_bench [--agents=10000] [--window-seconds=120] [--namespaces=10]
// Prints operator CPU per heartbeat, heartbeats per second a core sustains,
// lag (Job creation minus slot) p50/p99, the operator's heap peak and the
// process's peak RSS (the in-memory API server's objects included).
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>
#include <random>
#include <vector>

#include "bench/operator/capacity_node.h"
#include "bench/operator/capacity_sides.h"
#include "bench/operator/int_flags.h"
#include "bench/operator/proc_stats.h"
#include "controllers/model/agent_grants.h"
#include "controllers/model/json_util.h"
#include "controllers/pod/job_builder.h"
#include "controllers/runtime/metrics.h"
#include "controllers/runtime/workqueue.h"
#include "controllers/shell/agent_reconciler.h"
#include "controllers/shell/cluster_cache.h"
#include "controllers/shell/fleet_wiring.h"
#include "controllers/shell/provider_holds.h"
#include "operator/reconcile_workers.h"
#include "tests/sim/feed.h"
#include "tests/sim/transport.h"

namespace {

using namespace std::chrono_literals;
using hb::sim::Json;
using hb::sim::TimePoint;
namespace ctl = hb::controllers;

constexpr const char* kStart = "2026-03-10T08:00:00Z";
constexpr const char* kOperatorNamespace = "heartbeat-system";
// Garbage collection and forgetting delivered changes: the harness's chores.
constexpr auto kCollectEvery = 30s;
constexpr auto kForgetEvery = 10s;
// How long a watch event takes to arrive: a few ms, no fault.
constexpr int kWatchLagMsMax = 20;

const char* event_name(hb::kube::WatchEventType type) {
  switch (type) {
    case hb::kube::WatchEventType::kAdded:
      return "ADDED";
    case hb::kube::WatchEventType::kDeleted:
      return "DELETED";
    default:
      return "MODIFIED";
  }
}

// The operator's client sends through this: the server's time is its own.
class ServerTimed final : public hb::http::Client {
 public:
  explicit ServerTimed(std::shared_ptr<hb::sim::Transport> inner) : inner_(std::move(inner)) {}
  hb::http::Response send(const hb::http::Request& request) override {
    hb::bench::SideScope server(hb::bench::Side::kHarness);
    return inner_->send(request);
  }
  hb::http::Response stream(const hb::http::Request& r, const hb::http::ChunkHandler& h) override {
    return inner_->stream(r, h);
  }

 private:
  std::shared_ptr<hb::sim::Transport> inner_;
};

Json agent_object(int i) {
  return {
      {"apiVersion", "heartbeat.dev/v1alpha1"},
      {"kind", "Agent"},
      {"metadata", {{"name", "agent-" + std::to_string(i)}, {"labels", {{"fleet", "bench"}}}}},
      {"spec",
       {{"type", "memgpt_agent"},
        {"model",
         {{"provider", "openai"},
          {"model", "gpt-4o-mini"},
          {"maxTokens", 4096},
          {"apiKeySecretRef", {{"name", "llm"}, {"key", "api-key"}}},
          {"pricing", {{"inputCentsPerMillionTokens", 15}, {"outputCentsPerMillionTokens", 60}}}}},
        {"heartbeat", {{"prompt", "Check the queue."}, {"interval", "5m"}, {"spread", "Auto"}}},
        {"budget", {{"monthlyCents", 100000}}}}}};
}

// The fleet, and what an operator that ran before made for it: each
// Agent's Lease, marked as proof that its per-agent objects exist.
void create_fleet(hb::sim::ApiServer& server, int agents, int namespaces) {
  for (int i = 0; i < agents; ++i) {
    const std::string ns = "team-" + std::to_string(i % namespaces);
    const hb::sim::Answer made =
        server.create(hb::sim::Actor::kUser, "agents", ns, agent_object(i));
    for (auto& [kind, object] :
         ctl::build_agent_objects(ctl::parse_agent_spec(made.body).spec, ctl::JobConfig{})) {
      if (kind != ctl::kKindLeases) continue;
      const hb::sim::Answer lease = server.create(hb::sim::Actor::kOperator, kind, ns, object);
      server.merge_patch(hb::sim::Actor::kOperator, kind, ns, ctl::name_of(lease.body),
                         ctl::agent_objects_made_patch(), false);
    }
  }
}

struct Measured {
  int64_t heartbeats = 0;
  std::vector<double> lag_seconds;
  int64_t cpu_ns = 0, informer_ns = 0;
  int64_t reconciles = 0, reconcile_errors = 0;
};

// The slot of a scheduler run's Job: its name ends in the slot's unix seconds.
std::optional<TimePoint> slot_of(const std::string& job_name) {
  const auto dash = job_name.rfind('-');
  if (dash == std::string::npos) return std::nullopt;
  const std::string digits = job_name.substr(dash + 1);
  if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos) {
    return std::nullopt;
  }
  return TimePoint(std::chrono::seconds(std::stoll(digits)));
}

class Bench {
 public:
  Bench(int agents, int namespaces, std::chrono::seconds window);
  void run();

 private:
  void start_operator();
  // Feeds deliver, then ready keys are reconciled; the clock moves by the
  // operator's CPU when `coupled`.
  void operator_turn(bool coupled);
  void chores();
  TimePoint next_time() const;
  void print() const;
  std::chrono::steady_clock::time_point steady_now() const {
    return std::chrono::steady_clock::time_point(now_ - start_);
  }

  int agents_, namespaces_;
  std::chrono::seconds window_;
  TimePoint start_, now_;
  hb::sim::ApiServer server_{[this] { return now_; }};
  std::mt19937_64 rng_{1};
  hb::bench::CapacityNode node_{server_, {}};
  bool measuring_ = false;
  Measured m_;
  TimePoint next_collect_{}, next_forget_{};
  // The operator.
  ctl::Metrics metrics_;
  std::unique_ptr<ctl::WorkQueue> queue_;
  std::vector<hb::sim::Feed*> feeds_;
  std::unique_ptr<ctl::ClusterCache> cache_;
  std::unique_ptr<ctl::AgentReconciler> reconciler_;
  std::atomic<int> active_{0};
};

Bench::Bench(int agents, int namespaces, std::chrono::seconds window)
    : agents_(agents),
      namespaces_(namespaces),
      window_(window),
      start_(*ctl::parse_rfc3339(kStart)),
      now_(start_) {
  server_.set_observer([this](hb::sim::Actor actor, const std::string& resource,
                              const std::optional<Json>& before, const std::optional<Json>& after) {
    if (!measuring_ || resource != "jobs" || before || !after || actor != hb::sim::Actor::kOperator)
      return;
    ++m_.heartbeats;
    if (auto slot = slot_of(ctl::name_of(*after))) {
      m_.lag_seconds.push_back(std::chrono::duration<double>(now_ - *slot).count());
    }
  });
}

void Bench::start_operator() {
  hb::bench::SideScope op(hb::bench::Side::kOperator);
  queue_ = std::make_unique<ctl::WorkQueue>([this] { return steady_now(); });
  ctl::describe_operator_metrics(metrics_);
  const auto enqueue = [q = queue_.get()](const std::string& key) { q->add(key); };
  auto make_feed = [this](const hb::kube::Resource& r, const hb::kube::InformerOptions& o) {
    auto feed = std::make_unique<hb::sim::Feed>(
        server_, feeds_.size() + 1, r.resource, o, [](uint64_t f, uint64_t rv) {
          return std::chrono::milliseconds((f * 31 + rv) % kWatchLagMsMax);
        });
    feed->set_encoder([](hb::kube::WatchEventType type, const Json& object) {
      hb::bench::SideScope server(hb::bench::Side::kHarness);  // the API server renders the event
      return Json{{"type", event_name(type)}, {"object", object}}.dump();
    });
    feeds_.push_back(feed.get());
    return feed;
  };
  auto transport = std::make_shared<hb::sim::Transport>(server_, hb::sim::Actor::kOperator, rng_);
  hb::kube::ClusterConfig cluster;
  cluster.server = "http://sim.invalid";
  hb::kube::ClientOptions client_options;
  client_options.qps = 0;  // no limiter: the control plane is out of the way
  auto client = std::make_shared<hb::kube::Client>(cluster, client_options,
                                                   std::make_shared<ServerTimed>(transport));
  // As operator/manager.cpp wires them.
  ctl::CacheOptions cache_options;
  cache_options.steady_now = [this] { return steady_now(); };
  ctl::ReconcilerConfig config;
  ctl::wire_fleet(
      0, [this] { return steady_now(); }, enqueue, client, kOperatorNamespace, cache_options,
      config);
  auto holds = std::make_shared<ctl::ProviderHolds>(enqueue);
  cache_options.provider_holds = holds;
  config.provider_holds = holds;
  config.own_namespace = kOperatorNamespace;
  cache_ = std::make_unique<ctl::ClusterCache>(make_feed, cache_options, enqueue);
  reconciler_ = std::make_unique<ctl::AgentReconciler>(
      client, *cache_, config, metrics_, [this] { return now_; }, [this] { return steady_now(); });
  cache_->start();
  for (hb::sim::Feed* f : feeds_) f->relist(now_);
}

void Bench::operator_turn(bool coupled) {
  hb::bench::SideTotals& totals = hb::bench::side_totals();
  auto advance = [&](int64_t before_ns) {
    const int64_t spent = totals.operator_cpu_ns - before_ns;
    if (measuring_) m_.cpu_ns += spent;
    if (coupled) now_ += std::chrono::nanoseconds(spent);
    return spent;
  };
  {
    const int64_t before = totals.operator_cpu_ns;
    {
      hb::bench::SideScope op(hb::bench::Side::kOperator);
      for (hb::sim::Feed* f : feeds_) f->deliver(now_);
    }
    const int64_t spent = advance(before);
    if (measuring_) m_.informer_ns += spent;
  }
  hb::operator_::ReconcileWorkerDeps deps{*queue_,
                                          [this](const std::string& ns, const std::string& name) {
                                            ++m_.reconciles;
                                            auto result = reconciler_->reconcile(ns, name);
                                            if (!result.ok()) ++m_.reconcile_errors;
                                            return result;
                                          },
                                          metrics_,
                                          "agent",
                                          active_,
                                          [this] { return steady_now(); }};
  for (;;) {
    const int64_t before = totals.operator_cpu_ns;
    bool processed = false;
    {
      hb::bench::SideScope op(hb::bench::Side::kOperator);
      processed = hb::operator_::process_ready_key(deps);
    }
    advance(before);
    if (!processed) return;
  }
}

void Bench::chores() {
  if (now_ >= next_collect_) {
    if (server_.removed_since_collection()) server_.collect_garbage();
    next_collect_ = now_ + kCollectEvery;
  }
  if (now_ < next_forget_) return;
  std::map<std::string, uint64_t> keep{{"jobs", node_.jobs_position()},
                                       {"pods", node_.pods_position()}};
  for (const hb::sim::Feed* f : feeds_) {
    auto [it, first] = keep.try_emplace(f->resource(), f->position());
    if (!first) it->second = std::min(it->second, f->position());
  }
  server_.forget_changes(keep);
  next_forget_ = now_ + kForgetEvery;
}

TimePoint Bench::next_time() const {
  TimePoint next = now_ + 1s;
  auto take = [&](std::optional<TimePoint> t) {
    if (t && *t < next) next = *t;
  };
  take(node_.next_due());
  for (hb::sim::Feed* f : feeds_) take(f->next_arrival());
  if (auto ready = queue_->next_ready_at()) take(now_ + (*ready - steady_now()));
  return std::max(next, now_ + 1ms);
}

void Bench::run() {
  const auto wall = std::chrono::steady_clock::now();
  create_fleet(server_, agents_, namespaces_);
  start_operator();
  // The start: every Agent's first pass, at one instant (not measured).
  operator_turn(false);
  const double setup_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall).count();
  std::fprintf(stderr, "capacity agents=%d setup_wall_s=%.1f reconciles=%lld\n", agents_, setup_s,
               static_cast<long long>(m_.reconciles));
  m_ = {};
  measuring_ = true;
  hb::bench::reset_operator_peak();
  const TimePoint end = now_ + window_;
  while (now_ < end) {
    node_.step(now_);
    chores();
    operator_turn(true);
    now_ = next_time();
  }
  measuring_ = false;
  print();
  std::fprintf(stderr, "capacity agents=%d wall_s=%.1f\n", agents_,
               std::chrono::duration<double>(std::chrono::steady_clock::now() - wall).count());
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<std::size_t>(p * static_cast<double>(v.size())))];
}

void Bench::print() const {
  const double cpu_s = static_cast<double>(m_.cpu_ns) / 1e9;
  const double per_hb_ms = m_.heartbeats ? cpu_s * 1e3 / static_cast<double>(m_.heartbeats) : 0;
  const auto [process_cpu, peak_rss_kib] = hb::bench::cpu_and_peak_rss(getpid());
  std::printf(
      "agents=%d window_s=%lld heartbeats=%lld operator_cpu_s=%.2f (informers %.2f) "
      "cpu_per_heartbeat_ms=%.3f heartbeats_per_core_s=%.0f lag_p50_s=%.3f lag_p99_s=%.3f "
      "lag_max_s=%.3f reconciles=%lld errors=%lld operator_heap_peak_mib=%.1f "
      "operator_heap_now_mib=%.1f process_peak_rss_mib=%.1f process_cpu_s=%.1f\n",
      agents_, static_cast<long long>(window_.count()), static_cast<long long>(m_.heartbeats),
      cpu_s, static_cast<double>(m_.informer_ns) / 1e9, per_hb_ms,
      per_hb_ms > 0 ? 1e3 / per_hb_ms : 0, percentile(m_.lag_seconds, 0.50),
      percentile(m_.lag_seconds, 0.99), percentile(m_.lag_seconds, 1.0),
      static_cast<long long>(m_.reconciles), static_cast<long long>(m_.reconcile_errors),
      static_cast<double>(hb::bench::side_totals().peak_operator_bytes) / 1048576.0,
      static_cast<double>(hb::bench::side_totals().live_bytes[1]) / 1048576.0,
      static_cast<double>(peak_rss_kib) / 1024.0, process_cpu);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  int agents = 10000, window = 120, namespaces = 10;
  const hb::bench::IntFlag flags[] = {
      {"--agents", &agents}, {"--window-seconds", &window}, {"--namespaces", &namespaces}};
  hb::bench::parse_int_flags(argc, argv, flags);
  spdlog::set_level(spdlog::level::warn);
  Bench bench(agents, std::max(1, namespaces), std::chrono::seconds(window));
  bench.run();
  return 0;
}
