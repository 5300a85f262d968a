// The real operator's memory at fleet size on the local control plane: N
// agents (1,000 by default), each with its history at the default
// historyLimits (10 succeeded + 5 failed runs, settled, their Jobs gone as
// the Jobs' TTL makes them go), one heartbeat in flight (its run Running, its
// Job, the Pod kube-controller-manager makes for it) and its Lease, all
// created through the API server from the same fixtures and generator as
// hb_operator_cache_memory_bench. Then the heartbeat-operator binary starts
// as after a restart or a change of leader: it lists everything, and makes
// each agent's per-agent objects. Its RSS is sampled every second from start
// until it is ready and for --minutes after; printed, not asserted.
//
// The agents' schedule ("0 0 1 1 *") has no slot while the bench runs and
// the run in flight has a day before its deadline and its stall window
// (10,000 agents took up to an hour to make, then settling and later runs
// on the kept fleet; no runner beats), so what is measured is
// the fleet held, not heartbeats made (hb_operator_fleet_bench measures those).
//
//   scripts/bench-rss.sh --agents=10000 [--minutes=2] [--threads=16] [--output-bytes=200]
//
// --namespace=NS starts the operator on a fleet an earlier run made in NS
// (with HB_BENCH_KEEP=1, which keeps the control plane): a restart whose
// per-agent objects and Pods are there already, in minutes instead of the
// half hour 10,000 agents take to make.
//
// --settle-qps=Q first runs the operator (not measured) at Q writes a second
// until every agent's per-agent objects and in-flight Pod are made, as an
// operator that has run a while leaves the fleet; at its default 20 QPS the
// 40,000 objects of 10,000 agents take over half an hour, so without it the
// measured minutes hold only the first agents' Pods.
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <iostream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "bench/operator/fleet_fixture.h"
#include "bench/operator/int_flags.h"
#include "bench/operator/proc_stats.h"
#include "controllers/model/agent_spec.h"
#include "controllers/run/run_status.h"
#include "tests/integration/operator/harness.h"

namespace {

using namespace hb::testing;
using namespace hb::bench;
namespace res = hb::kube::resources;

// The history at the default historyLimits: the oldest kHistoryFailedRuns
// settled runs Failed, the rest Succeeded, so the operator keeps them all
// (with every run Succeeded it would trim each agent to 10).
constexpr int kHistoryFailedRuns = hb::controllers::kHistoryFailedDefault;
constexpr int kHistoryRuns = hb::controllers::kHistorySucceededDefault + kHistoryFailedRuns;
constexpr int64_t kHistoryIntervalSeconds = 600;
constexpr const char* kNoSlotWhileMeasured = "0 0 1 1 *";
// The most a run's timeoutSeconds and --stall-timeout take: with an hour, the
// first agents' runs of a 10,000-agent fleet would pass their deadline while
// the last are made, and the settling operator would delete their Jobs.
constexpr int kRunDeadlineSeconds = 86400;
constexpr auto kReadyTimeout = std::chrono::minutes(20);

struct Options {
  int agents = 1000;
  int minutes = 2;
  int threads = 16;
  int output_bytes = 200;
  int settle_qps = 0;            // 0: measure the fleet as made, Pods still to come
  std::string reused_namespace;  // empty: make a fleet in a new namespace
};

// Takes `--namespace=NS` out of argv (the rest are integer flags).
std::string take_namespace_flag(int& argc, char** argv) {
  constexpr std::string_view kFlag = "--namespace=";
  std::string ns;
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a.substr(0, kFlag.size()) == kFlag) {
      ns = a.substr(kFlag.size());
    } else {
      argv[kept++] = argv[i];
    }
  }
  argc = kept;
  return ns;
}

Options parse(int argc, char** argv) {
  Options o;
  o.reused_namespace = take_namespace_flag(argc, argv);
  const IntFlag flags[] = {{"--agents", &o.agents},
                           {"--minutes", &o.minutes},
                           {"--threads", &o.threads},
                           {"--output-bytes", &o.output_bytes},
                           {"--settle-qps", &o.settle_qps}};
  parse_int_flags(argc, argv, flags);
  if (o.agents < 1 || o.minutes < 0 || o.threads < 1 || o.output_bytes < 0 || o.settle_qps < 0) {
    throw std::invalid_argument("--agents and --threads must be at least 1, the others 0");
  }
  return o;
}

// A loaded API server answers some writes with a 500 ("resource quota
// evaluation timed out") or a 429: each write is tried again after a pause
// instead of ending a fleet that has taken many minutes to make.
constexpr int kWriteAttemptsMax = 8;

template <typename Write>
json written(const Write& write) {
  for (int attempt = 1;; ++attempt) {
    auto result = write();
    const bool passing = result.is(hb::kube::ErrorKind::kServerError) ||
                         result.is(hb::kube::ErrorKind::kTooManyRequests);
    if (result.ok() || !passing || attempt == kWriteAttemptsMax)
      return std::move(result).or_throw();
    std::this_thread::sleep_for(std::chrono::seconds(attempt));
  }
}

// The object as the API server takes it on create: the fixture's identity,
// version and status left out (the status is written after, through /status).
json for_create(json object, const std::string& ns) {
  json& meta = object["metadata"];
  for (const char* field : {"uid", "resourceVersion", "creationTimestamp", "generation"}) {
    meta.erase(field);
  }
  meta["namespace"] = ns;
  object.erase("status");
  return object;
}

// A settled run's status as a run the deadline stopped leaves it.
void mark_failed(json& status) {
  status["phase"] = "Failed";
  status["reason"] = hb::controllers::kReasonDeadlineExceeded;
  status["exitCode"] = 1;
  status["output"] = "";
}

// Creates the object, then writes `status` (when given) onto what came back.
json create_with_status(hb::kube::Client& client, const hb::kube::Resource& r,
                        const std::string& ns, const json& object) {
  json created = written([&] { return client.create(r, ns, for_create(object, ns)); });
  if (!object.contains("status")) return created;
  created["status"] = object["status"];
  const std::string name = created["metadata"]["name"];
  return written([&] { return client.replace_status(r, ns, name, created); });
}

// One agent and everything of it the operator caches, as a fleet that has
// run for a while would have them.
class AgentWriter {
 public:
  AgentWriter(hb::kube::Client& client, const Templates& t, std::string ns, int output_bytes,
              uint64_t seed)
      : client_(client), t_(t), ns_(std::move(ns)), output_bytes_(output_bytes), variety_(seed) {}

  void write(int a, int64_t now) {
    const std::string name = "agent-" + std::to_string(a);
    const int64_t first_slot = now - kHistoryIntervalSeconds * kHistoryRuns;
    const std::string agent_uid = write_agent(name, first_slot);
    for (int k = 0; k < kHistoryRuns; ++k) {
      const int64_t slot = first_slot + kHistoryIntervalSeconds * k;
      const int64_t finished = slot + 2 + static_cast<int64_t>(variety_.below(120));
      write_run(t_.run, name, agent_uid, slot, finished, k < kHistoryFailedRuns);
    }
    write_in_flight(name, agent_uid, now);
    json lease =
        json::parse(substitute(t_.lease, {{t_.agent_name, name}, {t_.agent_uid, agent_uid}}));
    written([&] { return client_.create(res::kLeases, ns_, for_create(lease, ns_)); });
  }

 private:
  std::string write_agent(const std::string& name, int64_t first_slot) {
    const int64_t last = first_slot + kHistoryIntervalSeconds * (kHistoryRuns - 1);
    json agent = json::parse(
        substitute(t_.agent, {{t_.agent_name, name},
                              {kFixtureCreated, rfc3339(first_slot - kHistoryIntervalSeconds)},
                              {kFixtureStarted, rfc3339(last)},
                              {kFixtureFinished, rfc3339(last + 2)},
                              {kFixtureNext, rfc3339(last + kHistoryIntervalSeconds)}}));
    json& heartbeat = agent["spec"]["heartbeat"];
    heartbeat.erase("interval");
    heartbeat["schedule"] = kNoSlotWhileMeasured;
    agent["spec"]["runtime"]["timeoutSeconds"] = kRunDeadlineSeconds;
    return create_with_status(client_, res::kAgents, ns_, agent)["metadata"]["uid"];
  }

  std::vector<std::pair<std::string, std::string>> run_pairs(const std::string& agent,
                                                             const std::string& agent_uid,
                                                             int64_t slot, int64_t finished) {
    const std::string run = agent + "-" + std::to_string(slot);
    // The run's own name first: it contains the agent's.
    return {{t_.pod_name, run + "-abcde"},
            {t_.run_name, run},
            {t_.job_uid, variety_.uid()},
            {t_.agent_name, agent},
            {t_.agent_uid, agent_uid},
            {kFixtureStarted, rfc3339(slot)},
            {kFixtureFinished, rfc3339(finished)},
            {kFixtureNext, rfc3339(slot + kHistoryIntervalSeconds)},
            {kFixtureCleanup, rfc3339(finished + 120)},
            {kOutputPlaceholder, variety_.prose(output_bytes_)}};
  }

  json write_run(const std::string& text, const std::string& agent, const std::string& agent_uid,
                 int64_t slot, int64_t finished, bool failed) {
    json run = json::parse(substitute(text, run_pairs(agent, agent_uid, slot, finished)));
    if (failed) mark_failed(run["status"]);
    return create_with_status(client_, res::kHeartbeatRuns, ns_, run);
  }

  // The run in flight: Running since `now`, its Job made (the selector and
  // its label are the API server's to make); its Pod is
  // kube-controller-manager's once the operator has made the
  // ServiceAccount.
  void write_in_flight(const std::string& agent, const std::string& agent_uid, int64_t now) {
    const std::string name = agent + "-" + std::to_string(now);
    auto pairs = run_pairs(agent, agent_uid, now, now);
    json run = json::parse(substitute(t_.run_in_flight, pairs));
    const json status = run["status"];
    run.erase("status");
    const json made = create_with_status(client_, res::kHeartbeatRuns, ns_, run);
    pairs.insert(pairs.begin() + 2, {t_.run_uid, made["metadata"]["uid"].get<std::string>()});
    json job = json::parse(substitute(t_.job, pairs));
    job["spec"].erase("selector");
    job["spec"]["activeDeadlineSeconds"] = kRunDeadlineSeconds;
    json& labels = job["spec"]["template"]["metadata"]["labels"];
    labels.erase("controller-uid");
    labels.erase("job-name");
    const json made_job =
        written([&] { return client_.create(res::kJobs, ns_, for_create(job, ns_)); });
    json running = made;
    running["status"] = status;
    running["status"]["jobUID"] = made_job["metadata"]["uid"];
    written([&] { return client_.replace_status(res::kHeartbeatRuns, ns_, name, running); });
  }

  hb::kube::Client& client_;
  const Templates& t_;
  const std::string ns_;
  const int output_bytes_;
  Variety variety_;
};

struct Sample {
  double seconds = 0;
  long rss_kib = 0, anon_kib = 0, file_kib = 0;
};

Sample sample(pid_t pid, std::chrono::steady_clock::time_point from) {
  return {std::chrono::duration<double>(std::chrono::steady_clock::now() - from).count(),
          status_kib(pid, "VmRSS:"), status_kib(pid, "RssAnon:"), status_kib(pid, "RssFile:")};
}

void print_sample(const char* when, const Sample& s) {
  std::printf("| %s | %.0f s | %.1f MiB | %.1f MiB | %.1f MiB |\n", when, s.seconds,
              s.rss_kib / 1024.0, s.anon_kib / 1024.0, s.file_kib / 1024.0);
}

double create_fleet(hb::kube::Client& client, const Templates& t, const std::string& ns,
                    const Options& opt) {
  const auto started = std::chrono::steady_clock::now();
  const int64_t now = std::time(nullptr);
  std::atomic<int> next{0};
  std::vector<std::thread> writers;
  for (int w = 0; w < opt.threads; ++w) {
    writers.emplace_back([&, w] {
      AgentWriter writer(client, t, ns, opt.output_bytes, kVarietySeed + w);
      for (int a = next++; a < opt.agents; a = next++) writer.write(a, now);
    });
  }
  for (auto& w : writers) w.join();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
}

std::vector<std::string> operator_args(const std::string& ns) {
  return {"--namespace=" + ns, "--leader-elect=false", "--runner-image=runner:bench",
          "--stall-timeout=" + std::to_string(kRunDeadlineSeconds), "--log-level=warn"};
}

bool operator_ready(OperatorProcess& op) {
  try {
    return op.ready();
  } catch (const std::exception&) {
    return false;  // not listening yet
  }
}

int64_t count_pods(hb::kube::Client& client, const std::string& ns) {
  int64_t pods = 0;
  hb::kube::ListOptions page;
  page.limit = 500;
  auto listed = client.list_each(
      res::kPods, ns, page, [&](json) { ++pods; }, [&] { pods = 0; });
  return listed.ok() ? pods : -1;
}

// At 10,000 agents on 2 cores the last Pods come late: a Job whose Pod was
// refused before its ServiceAccount existed waits out kube-controller-
// manager's growing backoff (9,804 of 10,000 Pods after 30 minutes, all a
// minute later).
constexpr auto kSettleTimeout = std::chrono::minutes(60);
constexpr auto kSettlePollInterval = std::chrono::seconds(15);

// Runs the operator at `qps` until each agent's in-flight run has its Pod
// (kube-controller-manager makes it once the operator has made the agent's
// ServiceAccount) and the operator is ready, then stops it.
bool settle_fleet(hb::kube::Client& client, const std::string& ns, const Options& opt) {
  std::vector<std::string> args = operator_args(ns);
  args.push_back("--qps=" + std::to_string(opt.settle_qps));
  args.push_back("--burst=" + std::to_string(2 * opt.settle_qps));
  OperatorProcess op(args, "/tmp/hb-rss-settle-operator.log");
  const auto started = std::chrono::steady_clock::now();
  op.start();
  int64_t pods = 0;
  while (std::chrono::steady_clock::now() - started < kSettleTimeout && op.alive()) {
    std::this_thread::sleep_for(kSettlePollInterval);
    pods = count_pods(client, ns);
    if (pods >= opt.agents && operator_ready(op)) break;
  }
  op.kill(SIGTERM);
  std::printf("settled: %lld Pods for %d agents after %.0f s at %d QPS\n\n",
              static_cast<long long>(pods), opt.agents,
              std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count(),
              opt.settle_qps);
  std::fflush(stdout);
  return pods >= opt.agents;
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  try {
    opt = parse(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "hb_operator_fleet_rss_bench: " << e.what() << std::endl;
    return 2;
  }
  auto client = ClusterFixture::client();
  const bool reused = !opt.reused_namespace.empty();
  const std::string ns = reused ? opt.reused_namespace : ClusterFixture::make_namespace("rss");
  if (reused) {
    std::printf("fleet: reused from namespace %s (--agents is what made it)\n\n", ns.c_str());
  } else {
    const Templates t = load_templates(opt.output_bytes);
    const double create_seconds = create_fleet(*client, t, ns, opt);
    std::printf(
        "fleet: %d agents, %d runs (%d settled + 1 in flight each), %d Jobs, %d Leases in "
        "namespace %s, made in %.0f s\n\n",
        opt.agents, opt.agents * (kHistoryRuns + 1), kHistoryRuns, opt.agents, opt.agents,
        ns.c_str(), create_seconds);
  }
  std::fflush(stdout);

  if (opt.settle_qps > 0 && !settle_fleet(*client, ns, opt)) {
    std::cerr << "fleet not settled; see /tmp/hb-rss-settle-operator.log" << std::endl;
    return 1;
  }
  OperatorProcess op(operator_args(ns), "/tmp/hb-rss-operator.log");
  const auto from = std::chrono::steady_clock::now();
  op.start();
  const auto ready_by = from + kReadyTimeout;
  while (!operator_ready(op)) {
    if (!op.alive() || std::chrono::steady_clock::now() > ready_by) {
      std::cerr << "operator not ready; see /tmp/hb-rss-operator.log" << std::endl;
      return 1;
    }
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }
  const Sample at_ready = sample(op.pid(), from);
  const double writes_at_ready = op.metric("heartbeat_api_writes_total");
  const auto until = std::chrono::steady_clock::now() + std::chrono::minutes(opt.minutes);
  Sample highest = at_ready;
  while (std::chrono::steady_clock::now() < until && op.alive()) {
    std::this_thread::sleep_for(std::chrono::seconds(1));
    const Sample s = sample(op.pid(), from);
    if (s.rss_kib > highest.rss_kib) highest = s;
  }
  const Sample at_end = sample(op.pid(), from);
  const auto [cpu, peak_kib] = cpu_and_peak_rss(op.pid());
  const double writes = op.metric("heartbeat_api_writes_total");
  std::printf(
      "| operator | since start | RSS | anonymous | mapped files |\n| --- | --- | --- | --- | --- "
      "|\n");
  print_sample("ready (lists done)", at_ready);
  print_sample("highest sampled after", highest);
  print_sample("end", at_end);
  std::printf(
      "\noperator peak RSS (VmHWM) %.1f MiB; CPU %.1f s; API writes %.0f by ready, %.0f "
      "by the end\n",
      peak_kib / 1024.0, cpu, writes_at_ready, writes);
  return 0;
}
