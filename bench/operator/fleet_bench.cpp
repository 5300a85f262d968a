// The operator at fleet scale on the real local control plane: N agents (1,000
// by default) on 1-minute intervals, the heartbeat-operator binary, Jobs from
// kube-controller-manager and Pods played by the fake kubelet (each "runs" a
// couple of seconds and reports a result). After the measured minutes it
// prints schedule lag p50/p99 (from the operator's own histogram, as
// Prometheus' histogram_quantile would), API requests and writes per
// heartbeat, operator CPU and peak RSS. Printed, not asserted.
//
// Before the operator starts it probes the API server's own ceiling: how
// many small creates per second it takes from --probe-clients concurrent
// clients (the floor under any burst of heartbeats). Over the measured
// minutes it also reads the CPU of etcd, kube-apiserver and
// kube-controller-manager (HB_CONTROL_PLANE_DIR/pids, as control-plane.sh
// writes them), so a saturated control plane shows as such.
//
//   scripts/bench-fleet.sh            (starts and stops its own control plane)
//   hb_operator_fleet_bench --agents=1000 --minutes=3 --qps=200 --burst=400 --workers=4
//       [--spread-seconds=60]  create the agents over 60 s, so their slots
//                              spread over the minute (default 0: all at once)
//       [--spread-auto=1]      give every agent heartbeat.spread: Auto, so a
//                              fleet created at once spreads its own slots
//       [--policies=N]         N HeartbeatPolicies over every agent, with a
//                              budget and a cap the fleet never reaches: what
//                              a policy costs in writes and CPU
//       [--kubelet-workers=8]  the fake kubelet's threads, playing Pods from
//                              their events (1: one thread reading every Pod
//                              every 100 ms, as before 12-01)
//       [--wakeup-flood-rps=R] over the measured minutes, POST wakeups for
//                              agent-0 at R/s with its namespace's token
//                              (wakeup_flood.h); default 0: no flood
//
// Besides the operator's histogram (every agent), the bench times each
// scheduler run itself (lag_by_agent.h) and prints the lag of every agent
// but agent-0, flood or not, and agent-0's apart: the flooded agent's own
// runs queue behind its wakeups, the others' must not.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>

#include "bench/operator/int_flags.h"
#include "bench/operator/lag_by_agent.h"
#include "bench/operator/proc_stats.h"
#include "bench/operator/wakeup_flood.h"
#include "controllers/model/names.h"
#include "controllers/shell/agent_reconciler.h"
#include "controllers/shell/policy_status_writer.h"
#include "tests/integration/operator/harness.h"

namespace {

using namespace hb::testing;
using namespace hb::bench;
namespace res = hb::kube::resources;

constexpr int kCreateThreads = 8;
constexpr const char* kControlPlaneProcesses[] = {"etcd", "apiserver", "controller-manager"};
constexpr auto kPodRunFor = std::chrono::seconds(2);
constexpr auto kWarmUpRound = std::chrono::seconds(60);
// The agent a --wakeup-flood-rps flood wakes, and the namespace token it uses.
const std::string kFloodedAgent = "agent-0";
const std::string kFloodToken = "fleet-bench-wakeup-token-0123456789";

struct Options {
  int agents = 1000;
  int minutes = 3;
  int qps = 200;
  int burst = 400;
  int workers = 4;  // the operator's --workers (its default)
  int spread_seconds = 0;
  int spread_auto = 0;  // 1: heartbeat.spread: Auto on every agent
  int policies = 0;     // HeartbeatPolicies selecting every agent
  int probe_writes = 2000;
  int probe_clients = 32;
  // The fake kubelet's threads: a real fleet's Pods are played by many
  // kubelets at once, and one thread of requests fell behind the operator
  // when the API server slowed (tests/support/fake_kubelet.h).
  int kubelet_workers = 8;
  int wakeup_flood_rps = 0;  // 0: no flood
};

Options parse(int argc, char** argv) {
  Options o;
  const hb::bench::IntFlag flags[] = {{"--agents", &o.agents},
                                      {"--minutes", &o.minutes},
                                      {"--qps", &o.qps},
                                      {"--burst", &o.burst},
                                      {"--workers", &o.workers},
                                      {"--spread-seconds", &o.spread_seconds},
                                      {"--spread-auto", &o.spread_auto},
                                      {"--policies", &o.policies},
                                      {"--probe-writes", &o.probe_writes},
                                      {"--probe-clients", &o.probe_clients},
                                      {"--kubelet-workers", &o.kubelet_workers},
                                      {"--wakeup-flood-rps", &o.wakeup_flood_rps}};
  hb::bench::parse_int_flags(argc, argv, flags);
  if (o.agents < 1 || o.minutes < 1 || o.spread_seconds < 0 || o.probe_writes < 0 ||
      o.probe_clients < 1 || o.kubelet_workers < 1 || (o.spread_auto != 0 && o.spread_auto != 1) ||
      o.policies < 0 || o.wakeup_flood_rps < 0) {
    throw std::invalid_argument(
        "--agents, --minutes, --probe-clients and --kubelet-workers must be >= 1; "
        "--spread-seconds, --policies, --wakeup-flood-rps and "
        "--probe-writes >= 0; --spread-auto 0 or 1");
  }
  return o;
}

double cpu_of_pid_file(const std::string& path) {
  std::ifstream in(path);
  pid_t pid = 0;
  if (!(in >> pid) || pid <= 0) return 0;
  return cpu_and_peak_rss(pid).first;
}

// CPU seconds used so far by each control-plane process (0 when unknown).
std::map<std::string, double> control_plane_cpu() {
  std::map<std::string, double> cpu;
  const std::string dir = env("HB_CONTROL_PLANE_DIR");
  for (const char* name : kControlPlaneProcesses) {
    cpu[name] = dir.empty() ? 0 : cpu_of_pid_file(dir + "/pids/" + name + ".pid");
  }
  return cpu;
}

double quantile_of_sorted(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  return sorted[std::min(sorted.size() - 1, static_cast<size_t>(q * sorted.size()))];
}

// The API server's ceiling for small creates: `writes` ConfigMaps from
// `clients` threads at once (the operator watches no ConfigMaps).
void probe_write_ceiling(hb::kube::Client& client, const std::string& ns, int writes, int clients) {
  if (writes == 0) return;
  std::vector<std::vector<double>> latencies(clients);
  std::atomic<int> next{0};
  const auto started = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (int t = 0; t < clients; ++t) {
    threads.emplace_back([&, t] {
      for (int i = next++; i < writes; i = next++) {
        const json cm = {{"apiVersion", "v1"},
                         {"kind", "ConfigMap"},
                         {"metadata", {{"name", "probe-" + std::to_string(i)}}},
                         {"data", {{"k", "v"}}}};
        const auto t0 = std::chrono::steady_clock::now();
        client.create(res::kConfigMaps, ns, cm).or_throw();
        latencies[t].push_back(
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      }
    });
  }
  for (auto& t : threads) t.join();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::vector<double> all;
  for (const auto& l : latencies) all.insert(all.end(), l.begin(), l.end());
  std::sort(all.begin(), all.end());
  std::printf(
      "API server ceiling: %d ConfigMap creates from %d clients in %.2f s = %.0f creates/s "
      "(latency p50 %.1f ms, p99 %.1f ms)\n",
      writes, clients, seconds, writes / seconds, 1000 * quantile_of_sorted(all, 0.5),
      1000 * quantile_of_sorted(all, 0.99));
  std::fflush(stdout);
}

// histogram_quantile over the operator's cumulative buckets.
double quantile(double q, const std::vector<std::pair<double, double>>& buckets, double count) {
  if (count <= 0) return 0;
  const double rank = q * count;
  double lower = 0, below = 0;
  for (const auto& [le, cumulative] : buckets) {
    if (cumulative >= rank) {
      const double in_bucket = cumulative - below;
      return in_bucket <= 0 ? le : lower + (le - lower) * (rank - below) / in_bucket;
    }
    lower = le;
    below = cumulative;
  }
  return std::numeric_limits<double>::infinity();  // beyond the last bucket
}

// The operator's schedule-lag histogram; subtracting an earlier reading
// leaves the runs started in between.
struct LagHistogram {
  std::vector<std::pair<double, double>> buckets;  // (le, cumulative count)
  double count = 0;
  double sum = 0;
  LagHistogram operator-(const LagHistogram& earlier) const {
    LagHistogram d = *this;
    for (size_t i = 0; i < d.buckets.size() && i < earlier.buckets.size(); ++i) {
      d.buckets[i].second -= earlier.buckets[i].second;
    }
    d.count -= earlier.count;
    d.sum -= earlier.sum;
    return d;
  }
};

LagHistogram lag_histogram(OperatorProcess& op) {
  LagHistogram h;
  for (double le : {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0}) {
    std::ostringstream label;
    label << "heartbeat_schedule_lag_seconds_bucket{le=\"" << le << "\"}";
    h.buckets.emplace_back(le, op.metric(label.str()));
  }
  h.count = op.metric("heartbeat_schedule_lag_seconds_count");
  h.sum = op.metric("heartbeat_schedule_lag_seconds_sum");
  return h;
}

// The namespace's own wakeup token (wakeup_token.h), for the flood.
void create_wakeup_secret(hb::kube::Client& client, const std::string& ns) {
  client
      .create(res::kSecrets, ns,
              {{"apiVersion", "v1"},
               {"kind", "Secret"},
               {"metadata", {{"name", "heartbeat-wakeup"}}},
               {"stringData", {{"token", kFloodToken}}}})
      .or_throw();
}

std::string lag_quantiles(const std::vector<double>& sorted) {
  char text[96];
  std::snprintf(text, sizeof text, "%.3f s / %.3f s (%zu runs)", quantile_of_sorted(sorted, 0.5),
                quantile_of_sorted(sorted, 0.99), sorted.size());
  return text;
}

void print_flood_rows(const LagByAgent::Lags& lags, const WakeupFlood* flood) {
  std::printf(
      "| schedule lag p50 / p99 of every agent but %s (Job seen by a watch - slot) | %s |\n",
      kFloodedAgent.c_str(), lag_quantiles(lags.of_others).c_str());
  std::printf("| schedule lag p50 / p99 of %s%s | %s |\n", kFloodedAgent.c_str(),
              flood ? " (flooded)" : "", lag_quantiles(lags.of_agent).c_str());
  if (!flood) return;
  const FloodCounts& c = flood->counts();
  std::printf(
      "| wakeup flood on %s: sent / 201-202 / 429 / other | %lld (%.1f/s) / %lld / %lld / %lld "
      "|\n",
      kFloodedAgent.c_str(), static_cast<long long>(c.total()), c.total() / flood->seconds(),
      static_cast<long long>(c.accepted), static_cast<long long>(c.limited),
      static_cast<long long>(c.other));
}

}  // namespace

// How many runs started in each wall-clock second of [from, to), from each
// run's status.startedAt (the operator stamps it when it creates the Job):
// a herd shows as a high peak, a spread fleet as a flat line.
struct StartsPerSecond {
  int peak = 0, p99 = 0;
  double mean_busy = 0;  // over the seconds that had any start
};

StartsPerSecond starts_per_second(const json& runs, std::chrono::system_clock::time_point from,
                                  std::chrono::system_clock::time_point to) {
  std::map<int64_t, int> per_second;
  for (const json& r : runs["items"]) {
    const auto started = hb::controllers::time_at(r, "status/startedAt");
    if (!started || *started < from || *started >= to) continue;
    ++per_second[std::chrono::duration_cast<std::chrono::seconds>(*started - from).count()];
  }
  const int64_t seconds = std::chrono::duration_cast<std::chrono::seconds>(to - from).count();
  std::vector<int> counts;
  int total = 0;
  for (int64_t s = 0; s < seconds; ++s) {
    const auto it = per_second.find(s);
    counts.push_back(it == per_second.end() ? 0 : it->second);
    total += counts.back();
  }
  StartsPerSecond out;
  if (counts.empty()) return out;
  std::sort(counts.begin(), counts.end());
  out.peak = counts.back();
  out.p99 = counts[std::min(counts.size() - 1, counts.size() * 99 / 100)];
  out.mean_busy = per_second.empty() ? 0 : static_cast<double>(total) / per_second.size();
  return out;
}

int main(int argc, char** argv) {
  Options opt;
  try {
    opt = parse(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "hb_operator_fleet_bench: " << e.what() << std::endl;
    return 2;
  }
  auto client = ClusterFixture::client();
  const std::string ns = ClusterFixture::make_namespace("fleet");
  std::cout << "fleet bench: " << opt.agents << " agents at 1m in namespace " << ns << ", "
            << opt.minutes << " measured minutes, operator --qps=" << opt.qps
            << " --burst=" << opt.burst << " --workers=" << opt.workers << ", creation spread over "
            << opt.spread_seconds << " s, spread: " << (opt.spread_auto ? "Auto" : "None") << ", "
            << opt.policies << " HeartbeatPolicies over every agent, wakeup flood "
            << opt.wakeup_flood_rps << "/s on " << kFloodedAgent << std::endl;
  if (opt.wakeup_flood_rps > 0) create_wakeup_secret(*client, ns);
  probe_write_ceiling(*client, ns, opt.probe_writes, opt.probe_clients);

  for (int i = 0; i < opt.policies; ++i) {
    client
        ->create(
            res::kHeartbeatPolicies, ns,
            {{"apiVersion", "heartbeat.dev/v1alpha1"},
             {"kind", "HeartbeatPolicy"},
             {"metadata", {{"name", "policy-" + std::to_string(i)}}},
             {"spec",
              {{"budget", {{"monthlyCents", int64_t{1} << 40}}}, {"maxConcurrentRuns", 100000}}}})
        .or_throw();
  }

  OperatorProcess op({"--namespace=" + ns, "--leader-elect=false", "--runner-image=runner:bench",
                      "--qps=" + std::to_string(opt.qps), "--burst=" + std::to_string(opt.burst),
                      "--workers=" + std::to_string(opt.workers), "--log-level=warn"},
                     "/tmp/hb-fleet-operator.log");
  op.start();
  if (!wait_until([&] { return op.ready(); }, std::chrono::seconds(60))) {
    std::cerr << "operator not ready; see /tmp/hb-fleet-operator.log" << std::endl;
    return 1;
  }
  LagByAgent lag_by_agent(client, ns);
  if (!lag_by_agent.start()) {
    std::cerr << "the bench's run and Job watches did not sync" << std::endl;
    return 1;
  }

  const auto create_started = std::chrono::steady_clock::now();
  std::vector<std::thread> creators;
  for (int t = 0; t < kCreateThreads; ++t) {
    creators.emplace_back([&, t] {
      for (int i = t; i < opt.agents; i += kCreateThreads) {
        // Agent i is created at i/agents of the spread, so slots fall evenly.
        std::this_thread::sleep_until(
            create_started +
            std::chrono::milliseconds(int64_t{1000} * opt.spread_seconds * i / opt.agents));
        json heartbeat = {{"prompt", "Heartbeat."}, {"interval", "1m"}};
        if (opt.spread_auto != 0) heartbeat["spread"] = "Auto";
        json a = agent_manifest("agent-" + std::to_string(i), heartbeat);
        client->create(res::kAgents, ns, a).or_throw();
      }
    });
  }
  for (auto& c : creators) c.join();
  std::cout
      << "created " << opt.agents << " agents in "
      << std::chrono::duration<double>(std::chrono::steady_clock::now() - create_started).count()
      << " s" << std::endl;

  FakeKubelet kubelet(
      client, ns,
      [](const json&) {
        PodScript s;
        s.run_for = kPodRunFor;
        s.beat = false;  // the lease watchdog is not what is measured
        s.termination_message = FakeKubelet::result(0.1);
        return s;
      },
      opt.kubelet_workers);
  kubelet.start();

  // Measure the steady state: skip the first round of heartbeats (one
  // interval after creation), which also creates each agent's ServiceAccount,
  // Role, RoleBinding and Lease once.
  std::this_thread::sleep_for(std::chrono::seconds(55) + kWarmUpRound);
  const double requests0 = op.metric("rest_client_requests_total");
  const double writes0 = op.metric("heartbeat_api_writes_total");
  auto writes_of = [&](const char* kind) {
    return op.metric(std::string("heartbeat_api_writes_total{kind=\"") + kind + "\"}");
  };
  std::map<std::string, double> kind_writes0;
  std::vector<const char*> kinds(hb::controllers::kWriteKinds.begin(),
                                 hb::controllers::kWriteKinds.end());
  kinds.push_back(hb::controllers::kWritePolicyStatus);
  for (const char* kind : kinds) kind_writes0[kind] = writes_of(kind);
  const double started0 = op.metric("heartbeat_runs_started_total");
  const double finished0 = op.metric("heartbeat_runs_total");
  const auto [cpu0, rss0] = cpu_and_peak_rss(op.pid());
  const LagHistogram lag0 = lag_histogram(op);
  const auto plane_cpu0 = control_plane_cpu();
  const double bench_cpu0 = cpu_and_peak_rss(getpid()).first;
  const auto window_start = std::chrono::system_clock::now();
  std::optional<WakeupFlood> flood;
  if (opt.wakeup_flood_rps > 0) {
    flood.emplace(op.wakeup_port(), ns, kFloodedAgent, kFloodToken, opt.wakeup_flood_rps);
    flood->start();
  }
  std::this_thread::sleep_for(std::chrono::minutes(opt.minutes));
  if (flood) flood->stop();
  const auto window_end = std::chrono::system_clock::now();
  const auto plane_cpu1 = control_plane_cpu();
  const double bench_cpu = cpu_and_peak_rss(getpid()).first - bench_cpu0;
  const double requests = op.metric("rest_client_requests_total") - requests0;
  const double watches = op.metric("rest_client_requests_total{method=\"WATCH\"}");
  const double writes = op.metric("heartbeat_api_writes_total") - writes0;
  std::string writes_by_kind;
  for (const char* kind : kinds) {
    const double n = writes_of(kind) - kind_writes0[kind];
    if (n > 0)
      writes_by_kind += std::string(writes_by_kind.empty() ? "" : ", ") + kind + " " +
                        std::to_string(static_cast<long>(n));
  }
  const double started = op.metric("heartbeat_runs_started_total") - started0;
  const double finished = op.metric("heartbeat_runs_total") - finished0;
  const auto [cpu1, rss1] = cpu_and_peak_rss(op.pid());
  const LagHistogram lag = lag_histogram(op) - lag0;
  // What the RSS is made of at the end: heap and stacks, against mapped code.
  const long rss_anon = status_kib(op.pid(), "RssAnon:");
  const long rss_file = status_kib(op.pid(), "RssFile:");
  kubelet.stop();
  op.kill(SIGTERM);
  lag_by_agent.stop();
  const StartsPerSecond starts = starts_per_second(
      client->list_all(res::kHeartbeatRuns, ns).or_throw(), window_start, window_end);

  const double minutes = opt.minutes;
  std::printf("\n| measure | value |\n| --- | --- |\n");
  std::printf("| heartbeats started / finished in %d min | %.0f / %.0f |\n", opt.minutes, started,
              finished);
  std::printf(
      "| schedule lag p50 / p99 / mean (the operator's histogram: every agent's scheduler runs "
      "started in the measured minutes) | %.3f s / "
      "%.3f s / %.3f s |\n",
      quantile(0.5, lag.buckets, lag.count), quantile(0.99, lag.buckets, lag.count),
      lag.count > 0 ? lag.sum / lag.count : 0.0);
  print_flood_rows(lag_by_agent.lags(window_start, window_end, kFloodedAgent),
                   flood ? &*flood : nullptr);
  std::printf(
      "| Jobs started per second (the operator's start stamp), peak / p99 / mean over the busy "
      "seconds | %d / %d / %.1f |\n",
      starts.peak, starts.p99, starts.mean_busy);
  std::printf("| API requests per heartbeat (all verbs; %.0f watch opens in all) | %.2f |\n",
              watches, finished > 0 ? requests / finished : 0.0);
  std::printf("| writes per heartbeat | %.2f |\n", finished > 0 ? writes / finished : 0.0);
  std::printf("| writes by kind | %s |\n", writes_by_kind.c_str());
  std::printf("| operator CPU | %.1f s over %d min (%.1f%% of one core) |\n", cpu1 - cpu0,
              opt.minutes, 100.0 * (cpu1 - cpu0) / (minutes * 60));
  std::printf("| operator peak RSS | %.1f MiB |\n",
              static_cast<double>(std::max(rss0, rss1)) / 1024);
  std::printf(
      "| operator RSS at the end: anonymous (heap, stacks) / files (code) | %.1f / %.1f MiB |\n",
      static_cast<double>(rss_anon) / 1024, static_cast<double>(rss_file) / 1024);
  std::string plane;
  double plane_total = 0;
  for (const char* name : kControlPlaneProcesses) {
    const double used = plane_cpu1.at(name) - plane_cpu0.at(name);
    plane_total += used;
    char part[96];
    std::snprintf(part, sizeof part, "%s%s %.1f s", plane.empty() ? "" : ", ", name, used);
    plane += part;
  }
  const double machine = minutes * 60 * static_cast<double>(sysconf(_SC_NPROCESSORS_ONLN));
  std::printf("| control plane CPU | %s (%.0f%% of the machine) |\n", plane.c_str(),
              100.0 * plane_total / machine);
  std::printf("| this process (fake kubelet) CPU | %.1f s |\n", bench_cpu);
  std::printf("| operator + control plane + fake kubelet | %.0f%% of the machine's CPU |\n",
              100.0 * (cpu1 - cpu0 + plane_total + bench_cpu) / machine);
  try {
    client->remove(res::kNamespaces, "", ns).or_throw();
  } catch (const std::exception&) {
  }
  return 0;
}
