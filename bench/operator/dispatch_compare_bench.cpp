// Dispatch side by side (issue 15): Kubernetes' CronJob controller (v2, in
// kube-controller-manager) and heartbeat-operator, on the same local control
// plane, at the same client QPS/burst, N objects on `* * * * *` created
// together before their first slot. Each Job is timed on arrival on a watch
// minus its slot (both name their Jobs by slot: the CronJob controller
// `<name>-<unix minutes>`, the operator `<name>-<unix seconds>`). A fake
// kubelet finishes every Pod after 2 s. Printed, not asserted.
//
//   scripts/bench-dispatch.sh --objects=200 [--qps=20 --burst=30 --slots=2 --workers=4]
//                             [--cronjob=0: the operator's half alone]
//
// It also prints each slot's slowest Jobs; HB_BENCH_OPERATOR_LOG_LEVEL=info
// keeps the operator's story in /tmp/hb-dispatch-operator.log.
//
// scripts/bench-dispatch.sh starts the control plane with the cronjob
// controller and its CronJobControllerV2 gate on, and kube-controller-manager
// at --qps/--burst (its Job controller shares that budget, as in a cluster).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <map>
#include <mutex>

#include "api/heartbeat_pod.h"
#include "bench/operator/int_flags.h"
#include "controllers/model/json_util.h"
#include "controllers/model/names.h"
#include "tests/integration/operator/harness.h"

namespace {

using namespace hb::testing;
namespace res = hb::kube::resources;
using SystemClock = std::chrono::system_clock;

const hb::kube::Resource kCronJobs{"batch", "v1beta1", "cronjobs"};
constexpr auto kPodRunFor = std::chrono::seconds(2);
// Objects are created this long after a minute starts; their first slot is
// the next minute (about 55 s later, "a minute before their first slot").
constexpr int kCreateAtSecondOfMinute = 5;
// After the last slot, how long Jobs may still arrive and be counted.
constexpr auto kLateArrivalWindow = std::chrono::seconds(90);
constexpr int kCreateThreads = 8;
// Unix-minute Job suffixes are below this; unix seconds are above it.
constexpr int64_t kUnixMinutesMax = 100'000'000;

constexpr std::size_t kSlowestShown = 5;  // per slot, to see which heartbeats the tail is

struct Options {
  int objects = 200;
  int qps = 20;
  int burst = 30;
  int slots = 2;
  int workers = 4;
  int cronjob = 1;  // 0: the operator's half alone (while iterating on it)
};

Options parse(int argc, char** argv) {
  Options o;
  const hb::bench::IntFlag flags[] = {{"--objects", &o.objects}, {"--qps", &o.qps},
                                      {"--burst", &o.burst},     {"--slots", &o.slots},
                                      {"--workers", &o.workers}, {"--cronjob", &o.cronjob}};
  hb::bench::parse_int_flags(argc, argv, flags);
  if (o.objects < 1 || o.qps < 1 || o.burst < 1 || o.slots < 1 || o.workers < 1) {
    throw std::invalid_argument("every flag but --cronjob must be >= 1");
  }
  return o;
}

// The slot a Job was made for, from its name's numeric suffix.
std::optional<int64_t> slot_of_job(const std::string& name) {
  const auto dash = name.rfind('-');
  if (dash == std::string::npos) return std::nullopt;
  try {
    const int64_t n = std::stoll(name.substr(dash + 1));
    return n < kUnixMinutesMax ? n * 60 : n;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// Arrival minus slot (seconds) of every Job seen on the watch, by slot.
class JobArrivals {
 public:
  JobArrivals(std::shared_ptr<hb::kube::Client> client, const std::string& ns) {
    hb::kube::InformerOptions options;
    options.namespace_ = ns;
    jobs_ = std::make_unique<hb::kube::Informer>(client, res::kJobs, options);
    hb::kube::StoreHandlers handlers;
    handlers.on_add = [this](const json& job) { arrived(job); };
    jobs_->set_handlers(std::move(handlers));
    jobs_->start();
    jobs_->wait_for_sync(std::chrono::seconds(30));
  }
  ~JobArrivals() { jobs_->stop(); }

  std::map<int64_t, std::vector<double>> lags() const {
    std::lock_guard lock(mutex_);
    return lags_;
  }
  // The latest `count` Jobs of `slot`: name and lag, latest first.
  std::vector<std::pair<double, std::string>> latest(int64_t slot, std::size_t count) const {
    std::lock_guard lock(mutex_);
    auto it = named_.find(slot);
    if (it == named_.end()) return {};
    std::vector<std::pair<double, std::string>> out = it->second;
    std::sort(out.rbegin(), out.rend());
    out.resize(std::min(out.size(), count));
    return out;
  }

 private:
  void arrived(const json& job) {
    const double now = std::chrono::duration<double>(SystemClock::now().time_since_epoch()).count();
    const std::string name = hb::controllers::string_at(job, "metadata/name");
    const auto slot = slot_of_job(name);
    if (!slot) return;
    std::lock_guard lock(mutex_);
    lags_[*slot].push_back(now - static_cast<double>(*slot));
    named_[*slot].emplace_back(now - static_cast<double>(*slot), name);
  }

  std::unique_ptr<hb::kube::Informer> jobs_;
  mutable std::mutex mutex_;
  std::map<int64_t, std::vector<double>> lags_;
  std::map<int64_t, std::vector<std::pair<double, std::string>>> named_;
};

// Sleeps until `second` of the next minute; returns that minute's start.
SystemClock::time_point wait_for_second_of_minute(int second) {
  const auto now = SystemClock::now();
  auto minute = std::chrono::floor<std::chrono::minutes>(now);
  if (now >= minute + std::chrono::seconds(second)) minute += std::chrono::minutes(1);
  std::this_thread::sleep_until(minute + std::chrono::seconds(second));
  return minute;
}

void create_all(hb::kube::Client& client, const std::string& ns, int count,
                const std::function<json(int)>& manifest, const hb::kube::Resource& resource) {
  std::vector<std::thread> creators;
  for (int t = 0; t < kCreateThreads; ++t) {
    creators.emplace_back([&, t] {
      for (int i = t; i < count; i += kCreateThreads) {
        client.create(resource, ns, manifest(i)).or_throw();
      }
    });
  }
  for (auto& c : creators) c.join();
}

json cronjob_manifest(int i) {
  const json labels = {{hb::controllers::kLabelManagedBy, hb::controllers::kManagedByValue}};
  const json pod = {
      {"metadata", {{"labels", labels}}},
      {"spec",
       {{"restartPolicy", "Never"},
        {"containers",
         json::array({{{"name", hb::api::kRunnerContainerName}, {"image", "runner:bench"}}})}}}};
  return {{"apiVersion", "batch/v1beta1"},
          {"kind", "CronJob"},
          {"metadata", {{"name", "cron-" + std::to_string(i)}}},
          {"spec",
           {{"schedule", "* * * * *"},
            {"concurrencyPolicy", "Forbid"},
            {"jobTemplate", {{"spec", {{"backoffLimit", 0}, {"template", pod}}}}}}}};
}

json agent_of(int i) {
  return agent_manifest("agent-" + std::to_string(i),
                        {{"prompt", "Heartbeat."}, {"schedule", "* * * * *"}});
}

struct SlotRow {
  int within_minute = 0;
  double p50 = 0, p99 = 0;
};

SlotRow summarize(std::vector<double> lags) {
  SlotRow row;
  std::sort(lags.begin(), lags.end());
  for (double l : lags) row.within_minute += l < 60.0;
  auto q = [&](double p) {
    return lags.empty() ? 0.0
                        : lags[std::min(lags.size() - 1, static_cast<size_t>(p * lags.size()))];
  };
  row.p50 = q(0.5);
  row.p99 = q(0.99);
  return row;
}

// Creates the objects at :05, waits out `slots` slots and returns one row per slot.
std::vector<SlotRow> measure(hb::kube::Client& client, JobArrivals& arrivals, const std::string& ns,
                             const Options& opt, const std::function<json(int)>& manifest,
                             const hb::kube::Resource& resource) {
  const auto minute = wait_for_second_of_minute(kCreateAtSecondOfMinute);
  create_all(client, ns, opt.objects, manifest, resource);
  const auto first_slot = minute + std::chrono::minutes(1);
  std::this_thread::sleep_until(first_slot + std::chrono::minutes(opt.slots - 1) +
                                kLateArrivalWindow);
  const auto lags = arrivals.lags();
  std::vector<SlotRow> rows;
  for (int s = 0; s < opt.slots; ++s) {
    const int64_t slot = std::chrono::duration_cast<std::chrono::seconds>(
                             (first_slot + std::chrono::minutes(s)).time_since_epoch())
                             .count();
    auto it = lags.find(slot);
    rows.push_back(summarize(it == lags.end() ? std::vector<double>{} : it->second));
    std::printf("slowest Jobs of slot %d:", s + 1);
    for (const auto& [lag, name] : arrivals.latest(slot, kSlowestShown)) {
      std::printf(" %s %.1f s;", name.c_str(), lag);
    }
    std::printf("\n");
  }
  return rows;
}

void print_row(const char* system, const std::vector<SlotRow>& rows, int objects) {
  std::printf("| %s |", system);
  for (const SlotRow& r : rows) {
    std::printf(" %d/%d, %.1f s / %.1f s |", r.within_minute, objects, r.p50, r.p99);
  }
  std::printf("\n");
}

void delete_namespace(hb::kube::Client& client, const std::string& ns) {
  (void)client.remove(res::kNamespaces, "", ns);
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  try {
    opt = parse(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "hb_dispatch_compare_bench: " << e.what() << std::endl;
    return 2;
  }
  auto client = ClusterFixture::client();
  std::cout << "dispatch side by side: " << opt.objects << " objects on * * * * *, " << opt.slots
            << " slots, both at --qps=" << opt.qps << " --burst=" << opt.burst << std::endl;

  std::vector<SlotRow> cron_rows;
  if (opt.cronjob != 0) {
    const std::string ns = ClusterFixture::make_namespace("cron");
    JobArrivals arrivals(client, ns);
    FakeKubelet kubelet(client, ns, [](const json&) {
      PodScript s;
      s.run_for = kPodRunFor;
      s.beat = false;
      return s;
    });
    kubelet.start();
    cron_rows = measure(*client, arrivals, ns, opt, cronjob_manifest, kCronJobs);
    kubelet.stop();
    delete_namespace(*client, ns);
  }
  if (opt.cronjob != 0) print_row("CronJob controller v2 (so far)", cron_rows, opt.objects);
  std::fflush(stdout);  // shown while the operator's half runs (stdout may be a file)

  const std::string ns = ClusterFixture::make_namespace("agents");
  OperatorProcess op({"--namespace=" + ns, "--leader-elect=false", "--runner-image=runner:bench",
                      "--qps=" + std::to_string(opt.qps), "--burst=" + std::to_string(opt.burst),
                      "--workers=" + std::to_string(opt.workers),
                      "--log-level=" + std::string(std::getenv("HB_BENCH_OPERATOR_LOG_LEVEL")
                                                       ? std::getenv("HB_BENCH_OPERATOR_LOG_LEVEL")
                                                       : "warn")},
                     "/tmp/hb-dispatch-operator.log");
  op.start();
  if (!wait_until([&] { return op.ready(); }, std::chrono::seconds(60))) {
    std::cerr << "operator not ready; see /tmp/hb-dispatch-operator.log" << std::endl;
    return 1;
  }
  std::vector<SlotRow> op_rows;
  {
    JobArrivals arrivals(client, ns);
    FakeKubelet kubelet(client, ns, [](const json&) {
      PodScript s;
      s.run_for = kPodRunFor;
      s.beat = false;
      s.termination_message = FakeKubelet::result(0.1);
      return s;
    });
    kubelet.start();
    op_rows = measure(*client, arrivals, ns, opt, agent_of, res::kAgents);
    kubelet.stop();
  }
  std::string by_class;
  for (const char* cls : {"dispatch", "lifecycle", "bookkeeping"}) {
    by_class += std::string(by_class.empty() ? "" : ", ") + cls + " " +
                std::to_string(static_cast<long>(op.metric(
                    std::string("heartbeat_api_writes_by_class_total{class=\"") + cls + "\"}")));
  }
  const double started = op.metric("heartbeat_runs_started_total");
  op.kill(SIGTERM);
  delete_namespace(*client, ns);

  std::printf("\n| system | ");
  for (int s = 1; s <= opt.slots; ++s) {
    std::printf("slot %d: Jobs created within the minute, p50 / p99 | ", s);
  }
  std::printf("\n|---|");
  for (int s = 1; s <= opt.slots; ++s) std::printf("---|");
  std::printf("\n");
  if (opt.cronjob != 0) print_row("CronJob controller v2", cron_rows, opt.objects);
  print_row("heartbeat-operator", op_rows, opt.objects);
  std::printf(
      "\noperator writes by class over the run (agent objects included): %s; %.0f runs "
      "started\n",
      by_class.c_str(), started);
  return 0;
}
