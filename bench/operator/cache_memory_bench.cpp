// What the operator's caches hold at fleet size: the real ClusterCache (its
// stores, projections and indexes) filled, as its informers would fill it,
// with N agents and each agent's history at the default historyLimits
// (10 succeeded + 5 failed runs, each with its Job and Pod) plus one
// heartbeat in flight and the agent's Lease. The objects are copies of ones
// the operator, kube-controller-manager and the fake kubelet made on the
// local control plane (fixtures/fleet_objects.json, managedFields stripped,
// as the Store strips them), renamed per agent and run; --output-bytes sets
// the size of each run's output (in its status and its Pod's termination
// message), which is the agent's to choose up to 4,000 bytes. What differs
// between real objects differs here too, from a seeded generator: random
// UIDs, each run's own times and resourceVersion, and each output its own
// prose (the caches keep objects compressed, so copies that differed only
// by name would flatter them).
//
// Each fleet size runs in a fresh child process, so its peak RSS is its own.
// Printed, not asserted: heap bytes in use (mallinfo2) added by each kind of
// object and by the reconciler's typed views of every agent and run (what
// a pass over the fleet keeps), and the process's RSS and peak RSS.
//
//   hb_operator_cache_memory_bench [--agents=1000,5000,10000] [--output-bytes=200]
#include <malloc.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "bench/operator/fleet_fixture.h"
#include "controllers/model/agent_spec.h"
#include "controllers/shell/cluster_cache.h"
#include "controllers/shell/view_cache.h"

namespace {

using hb::controllers::Json;
using namespace hb::bench;

constexpr int kHistoryRuns =
    hb::controllers::kHistorySucceededDefault + hb::controllers::kHistoryFailedDefault;
constexpr int kRunsInFlight = 1;

// A cache source the bench fills itself: the Store an informer would keep,
// with the same projection.
class FilledSource final : public hb::kube::CachedResource {
 public:
  explicit FilledSource(const hb::kube::InformerOptions& options) {
    store_.set_projection(options.projection, options.list_pass, options.text_cut);
  }
  void set_handlers(hb::kube::StoreHandlers handlers) override {
    store_.set_handlers(std::move(handlers));
  }
  void start() override {}
  void stop() override {}
  bool has_synced() const override { return true; }
  bool wait_for_sync(std::chrono::milliseconds) const override { return true; }
  const hb::kube::Store& store() const override { return store_; }
  void reproject(const std::string& key) override { store_.reproject(key); }
  // The informer's startup list: every object projected as it arrives, then
  // swapped in at once (the handlers fill the cache's indexes).
  hb::kube::Store::Replacement begin_list() const { return store_.begin_replace(); }
  void end_list(hb::kube::Store::Replacement list) { store_.replace(std::move(list)); }

 private:
  hb::kube::Store store_;
};

std::size_t heap_bytes() {
  return mallinfo2().uordblks;
}

long status_kib(const char* field) {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind(field, 0) == 0) return std::stol(line.substr(std::string(field).size()));
  }
  return 0;
}

// One fleet size, in this (child) process; prints one table row.
void measure(int agents, const Templates& t, int output_bytes) {
  std::map<std::string, FilledSource*> sources;
  hb::controllers::CacheOptions options;
  options.namespaces = {kFixtureNamespace};
  const std::size_t heap_start = heap_bytes();
  hb::controllers::ClusterCache cache(
      [&sources](const hb::kube::Resource& r, const hb::kube::InformerOptions& o) {
        auto source = std::make_unique<FilledSource>(o);
        sources[r.resource] = source.get();
        return source;
      },
      std::move(options), [](const std::string&) {});
  Variety variety;
  uint64_t resource_version = 48'000'000;
  std::map<std::string, std::size_t> added;
  auto fill = [&](const char* plural, auto&& object_of) {
    const std::size_t before = heap_bytes();
    FilledSource& source = *sources.at(plural);
    hb::kube::Store::Replacement list = source.begin_list();
    for (int a = 0; a < agents; ++a) {
      for (std::string& text : object_of(a)) {
        Json object = Json::parse(text);
        resource_version += 1 + variety.below(40);
        object["metadata"]["resourceVersion"] = std::to_string(resource_version);
        list.add(std::move(object));
      }
    }
    source.end_list(std::move(list));
    added[plural] = heap_bytes() - before;
  };
  std::vector<std::string> agent_uids;
  std::vector<int64_t> agent_created;
  for (int a = 0; a < agents; ++a) {
    agent_uids.push_back(variety.uid());
    agent_created.push_back(kFixtureDayStart + static_cast<int64_t>(variety.below(3600)));
  }
  constexpr int64_t kIntervalSeconds = 600;
  auto slot = [&](int a, int k) { return agent_created[a] + kIntervalSeconds * (k + 1); };
  auto agent_pairs = [&](int a) {
    return std::vector<std::pair<std::string, std::string>>{
        {t.agent_uid, agent_uids[a]},
        {t.agent_name, "agent-" + std::to_string(a)},
        {kFixtureCreated, rfc3339(agent_created[a])}};
  };
  auto run_name = [&](int a, int k) {
    return "agent-" + std::to_string(a) + "-" + std::to_string(slot(a, k));
  };
  // Per run: its own name and uids first (they contain the agent's name).
  auto run_pairs = [&](int a, int k) {
    auto pairs =
        std::vector<std::pair<std::string, std::string>>{{t.pod_name, run_name(a, k) + "-abcde"},
                                                         {t.run_name, run_name(a, k)},
                                                         {t.run_uid, variety.uid()},
                                                         {t.job_uid, variety.uid()},
                                                         {t.pod_uid, variety.uid()}};
    const int64_t started = slot(a, k) + static_cast<int64_t>(variety.below(3));
    const int64_t finished = started + 2 + static_cast<int64_t>(variety.below(120));
    pairs.insert(pairs.end(), {{kFixtureStarted, rfc3339(started)},
                               {kFixtureFinished, rfc3339(finished)},
                               {kFixtureNext, rfc3339(slot(a, k + 1))},
                               {kFixtureCleanup, rfc3339(finished + 120)},
                               {kOutputPlaceholder, variety.prose(output_bytes)}});
    for (auto& p : agent_pairs(a)) pairs.push_back(p);
    return pairs;
  };
  auto per_run = [&](const std::string& finished, const std::string& in_flight) {
    return [&](int a) {
      std::vector<std::string> out;
      for (int k = 0; k < kHistoryRuns + kRunsInFlight; ++k) {
        out.push_back(substitute(k < kHistoryRuns ? finished : in_flight, run_pairs(a, k)));
      }
      return out;
    };
  };
  fill("agents", [&](int a) {
    auto pairs = agent_pairs(a);  // its status tells of its last run and next slot
    const int64_t last = slot(a, kHistoryRuns - 1);
    pairs.insert(pairs.end(), {{kFixtureStarted, rfc3339(last)},
                               {kFixtureFinished, rfc3339(last + 2 + variety.below(120))},
                               {kFixtureNext, rfc3339(slot(a, kHistoryRuns))}});
    return std::vector<std::string>{substitute(t.agent, pairs)};
  });
  fill("heartbeatruns", per_run(t.run, t.run_in_flight));
  fill("jobs", per_run(t.job, t.job));
  fill("pods", per_run(t.pod, t.pod));
  fill("leases", [&](int a) {
    auto pairs = agent_pairs(a);
    pairs.insert(pairs.begin(), {t.lease_uid, variety.uid()});
    return std::vector<std::string>{substitute(t.lease, pairs)};
  });
  // A reconcile pass over every agent keeps each agent's typed views (the
  // reconciler's ViewCache).
  hb::controllers::ViewCache views;
  const std::size_t before_views = heap_bytes();
  for (int a = 0; a < agents; ++a) {
    const std::string name = "agent-" + std::to_string(a);
    std::optional<Json> agent = cache.agent(kFixtureNamespace, name);
    if (!agent) throw std::runtime_error("agent not cached: " + name);
    (void)views.views(std::string(kFixtureNamespace) + "/" + name, *agent,
                      cache.runs_of(kFixtureNamespace, name));
  }
  added["views"] = heap_bytes() - before_views;
  malloc_trim(0);
  hb::kube::Store::Footprint kept;  // the objects' JSON text against what is stored of it
  for (const auto& [plural, source] : sources) {
    const hb::kube::Store::Footprint one = source->store().footprint();
    kept.text_bytes += one.text_bytes;
    kept.stored_bytes += one.stored_bytes;
  }
  const double mib = 1024.0 * 1024.0;
  const std::size_t total = heap_bytes() - heap_start;
  std::printf(
      "| %d | %d | %.1f → %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f (%.0f B an agent) "
      "| %.1f | %.1f |\n",
      agents, output_bytes, kept.text_bytes / mib, kept.stored_bytes / mib, added["agents"] / mib,
      added["heartbeatruns"] / mib, added["jobs"] / mib, added["pods"] / mib, added["leases"] / mib,
      added["views"] / mib, total / mib, static_cast<double>(total) / agents,
      status_kib("VmRSS:") / 1024.0, status_kib("VmHWM:") / 1024.0);
  std::fflush(stdout);
}

std::vector<int> parse_list(const std::string& text) {
  std::vector<int> out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) out.push_back(std::stoi(item));
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> fleet = {1000, 5000, 10000};
  int output_bytes = 200;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--agents=", 0) == 0) {
      fleet = parse_list(arg.substr(9));
    } else if (arg.rfind("--output-bytes=", 0) == 0) {
      output_bytes = std::stoi(arg.substr(15));
    } else {
      std::cerr << "usage: " << argv[0] << " [--agents=1000,5000,10000] [--output-bytes=200]\n";
      return 2;
    }
  }
  const Templates t = load_templates(output_bytes);
  std::printf(
      "operator caches: per agent 1 Agent, %d runs (%d finished + %d in flight) with their Jobs "
      "and Pods, 1 Lease\n\n",
      kHistoryRuns + kRunsInFlight, kHistoryRuns, kRunsInFlight);
  std::printf(
      "| agents | output bytes | objects' text → stored MiB | Agents MiB | runs MiB | Jobs MiB | "
      "Pods MiB | Leases MiB | views MiB | heap MiB | RSS MiB | peak RSS MiB |\n| --- | --- | --- "
      "| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
  std::fflush(stdout);
  for (int agents : fleet) {
    const pid_t child = fork();
    if (child == 0) {
      measure(agents, t, output_bytes);
      _exit(0);
    }
    int status = 0;
    waitpid(child, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return 1;
  }
  return 0;
}
