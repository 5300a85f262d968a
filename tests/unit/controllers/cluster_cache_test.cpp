// The cache keeps the Jobs and Pods of runs that can still change, and lets
// go of those of settled runs (final, cost recorded): at fleet size they
// would be most of the operator's memory, and nothing decides from them.
#include "controllers/shell/cluster_cache.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "api/usage_report.h"
#include "controllers/model/names.h"
#include "controllers/run/cache_projection.h"
#include "controllers/run/run_after_job.h"
#include "controllers/run/run_record.h"

namespace hb::controllers {
namespace {

constexpr const char* kNs = "team-a";

// A cache source the test feeds by hand: the Store an informer keeps, with
// the projection the cache asked for.
class HandFedSource final : public kube::CachedResource {
 public:
  HandFedSource(const kube::InformerOptions& options, std::string resource,
                std::vector<std::string>& started)
      : resource_(std::move(resource)), started_(started) {
    store_.set_projection(options.projection, options.list_pass, options.text_cut);
  }
  void set_handlers(kube::StoreHandlers handlers) override {
    store_.set_handlers(std::move(handlers));
  }
  void start() override { started_.push_back(resource_); }
  void stop() override {}
  bool has_synced() const override { return synced; }
  bool wait_for_sync(std::chrono::milliseconds timeout) const override {
    if (!synced) std::this_thread::sleep_for(timeout);
    return synced;
  }
  uint64_t items_listed() const override { return listed; }
  const kube::Store& store() const override { return store_; }
  void reproject(const std::string& key) override { store_.reproject(key); }
  void send(kube::WatchEventType type, Json object) { store_.apply({type, std::move(object)}); }
  void list(std::vector<Json> objects) { store_.replace(std::move(objects)); }
  // A list built by hand, to look at it before the swap.
  kube::Store& store_for_list() { return store_; }
  std::atomic<bool> synced{true};
  std::atomic<uint64_t> listed{0};

 private:
  std::string resource_;
  std::vector<std::string>& started_;
  kube::Store store_;
};

Json run(const std::string& phase, bool counted, const std::string& rv) {
  return {{"metadata", {{"name", "bot-1"}, {"namespace", kNs}, {"resourceVersion", rv}}},
          {"spec", {{"agentRef", {{"name", "bot"}}}}},
          {"status", {{"phase", phase}, {"costRecorded", counted}, {"jobName", "bot-1"}}}};
}

Json owned(const std::string& name, const std::string& rv) {
  return {{"metadata",
           {{"name", name},
            {"namespace", kNs},
            {"resourceVersion", rv},
            {"labels", {{kLabelManagedBy, kManagedByValue}}},
            {"annotations", {{kAnnotationAgentName, "bot"}, {kAnnotationRunName, "bot-1"}}}}},
          {"status", {{"phase", "Running"}}}};
}

CacheOptions options() {
  CacheOptions o;
  o.namespaces = {kNs};
  return o;
}

struct Fixture {
  std::map<std::string, HandFedSource*> sources;
  std::vector<std::string> queued, started;
  ClusterCache cache;
  Fixture()
      : cache(
            [this](const kube::Resource& r, const kube::InformerOptions& o) {
              auto source = std::make_unique<HandFedSource>(o, r.resource, started);
              sources[r.resource] = source.get();
              return source;
            },
            options(), [this](const std::string& k) { queued.push_back(k); }) {}
  HandFedSource& runs() { return *sources.at("heartbeatruns"); }
  HandFedSource& jobs() { return *sources.at("jobs"); }
  HandFedSource& pods() { return *sources.at("pods"); }
  HandFedSource& agents() { return *sources.at("agents"); }
  HandFedSource& leases() { return *sources.at("leases"); }
  bool has_job() const { return cache.job(kNs, job_name_for_run("bot-1")).has_value(); }
  std::size_t pods_of_run() const { return cache.pods_of(kNs, "bot-1").size(); }
};

TEST(ClusterCache, ASettledRunsJobAndPodsAreLetGoAndStayGone) {
  Fixture f;
  f.runs().send(kube::WatchEventType::kAdded, run("Running", false, "1"));
  f.jobs().send(kube::WatchEventType::kAdded, owned(job_name_for_run("bot-1"), "2"));
  f.pods().send(kube::WatchEventType::kAdded, owned("bot-1-x7k2p", "3"));
  EXPECT_TRUE(f.has_job());
  EXPECT_EQ(f.pods_of_run(), 1u);

  // Final but its cost not yet recorded: still decided from its Pod.
  f.runs().send(kube::WatchEventType::kModified, run("Succeeded", false, "4"));
  EXPECT_TRUE(f.has_job());
  EXPECT_EQ(f.pods_of_run(), 1u);

  f.runs().send(kube::WatchEventType::kModified, run("Succeeded", true, "5"));
  EXPECT_FALSE(f.has_job());
  EXPECT_EQ(f.pods_of_run(), 0u);
  EXPECT_FALSE(f.pods().store().contains(std::string(kNs) + "/bot-1-x7k2p"));

  // Later events for them keep nothing and queue nobody.
  f.queued.clear();
  f.pods().send(kube::WatchEventType::kModified, owned("bot-1-x7k2p", "6"));
  f.jobs().send(kube::WatchEventType::kModified, owned(job_name_for_run("bot-1"), "7"));
  f.pods().send(kube::WatchEventType::kDeleted, owned("bot-1-x7k2p", "8"));
  EXPECT_FALSE(f.has_job());
  EXPECT_EQ(f.pods_of_run(), 0u);  // no tombstone either
  EXPECT_TRUE(f.queued.empty());
}

// A run's Pods are read by its Job's name (the Job controller's
// generateName, which the API server cuts at 58 characters), and told apart
// from the Pods of a run whose longer name shares that prefix by their run
// annotation: no index of Pods by run is kept.
TEST(ClusterCache, ARunsPodsAreFoundByItsJobsNameAndTheirRunAnnotation) {
  Fixture f;
  auto pod_of = [](const std::string& name, const std::string& run_name) {
    Json pod = owned(name, "3");
    pod["metadata"]["annotations"][kAnnotationRunName] = run_name;
    return pod;
  };
  f.pods().send(kube::WatchEventType::kAdded, pod_of("bot-1-x7k2p", "bot-1"));
  f.pods().send(kube::WatchEventType::kAdded, pod_of("bot-1-2-ab12c", "bot-1-2"));
  f.pods().send(kube::WatchEventType::kAdded, pod_of("bot-0-zz9zz", "bot-0"));
  const std::vector<Json> pods = f.cache.pods_of(kNs, "bot-1");
  ASSERT_EQ(pods.size(), 1u);
  EXPECT_EQ(name_of(pods[0]), "bot-1-x7k2p");
  EXPECT_EQ(f.cache.pods_of(kNs, "bot-1-2").size(), 1u);

  const std::string long_run(40, 'a');
  const std::string long_name = long_run + "-agent-with-a-long-name-1764640000";
  const std::string job = job_name_for_run(long_name);
  ASSERT_GT(job.size() + 1, kGeneratedNameBaseCharsMax);
  const std::string pod_name = job.substr(0, kGeneratedNameBaseCharsMax) + "q9x8z";
  f.pods().send(kube::WatchEventType::kAdded, pod_of(pod_name, long_name));
  ASSERT_EQ(f.cache.pods_of(kNs, long_name).size(), 1u);
  EXPECT_EQ(name_of(f.cache.pods_of(kNs, long_name)[0]), pod_name);
}

// A Job made before its run (run_after_job.h) is found by its agent until
// it is handed to the run or gone; the projection keeps what the pass reads.
TEST(ClusterCache, JobsAwaitingTheirRunAreFoundByAgentUntilHandedOver) {
  Fixture f;
  Json job = owned(job_name_for_run("bot-1"), "3");
  job["metadata"]["annotations"][kAnnotationAgentUid] = "uid-bot";
  job["metadata"]["annotations"][kAnnotationRunToMake] = R"({"kind":"HeartbeatRun"})";
  f.jobs().send(kube::WatchEventType::kAdded, job);
  const std::vector<Json> awaiting = f.cache.jobs_awaiting_run(kNs, "bot");
  ASSERT_EQ(awaiting.size(), 1u);
  EXPECT_EQ(annotation_at(awaiting[0], kAnnotationAgentUid), "uid-bot");
  EXPECT_EQ(annotation_at(awaiting[0], kAnnotationRunToMake), R"({"kind":"HeartbeatRun"})");
  EXPECT_TRUE(f.cache.jobs_awaiting_run(kNs, "other").empty());
  Json handed = job;
  handed["metadata"]["resourceVersion"] = "4";
  handed["metadata"]["annotations"].erase(kAnnotationRunToMake);
  f.jobs().send(kube::WatchEventType::kModified, handed);
  EXPECT_TRUE(f.cache.jobs_awaiting_run(kNs, "bot").empty());
  f.jobs().send(kube::WatchEventType::kModified, job);  // positive control: found again
  EXPECT_EQ(f.cache.jobs_awaiting_run(kNs, "bot").size(), 1u);
  f.jobs().send(kube::WatchEventType::kDeleted, job);
  EXPECT_TRUE(f.cache.jobs_awaiting_run(kNs, "bot").empty());
}

// The concurrency gate is told of a Job made before its run as of the run
// it carries, so the run counts in its agent's pools before it is made (a
// restarted operator knows no more than that). Positive control: a Job
// that carries nothing is told as a Job without its run.
TEST(ClusterCache, AJobAwaitingItsRunIsToldAsTheRunItCarries) {
  for (bool carries : {true, false}) {
    std::vector<std::string> told;
    std::map<std::string, HandFedSource*> sources;
    std::vector<std::string> started;
    CacheOptions o = options();
    o.observe_run = [&](const std::string& key, const Json* run, bool has_job) {
      told.push_back(key + (run ? " agent=" + string_at(*run, "spec/agentRef/name") : " no run") +
                     (has_job ? " job" : ""));
    };
    ClusterCache cache(
        [&](const kube::Resource& r, const kube::InformerOptions& io) {
          auto source = std::make_unique<HandFedSource>(io, r.resource, started);
          sources[r.resource] = source.get();
          return source;
        },
        std::move(o), [](const std::string&) {});
    Json job = owned(job_name_for_run("bot-1"), "3");
    if (carries) {
      const Json carried = {{"apiVersion", "heartbeat.dev/v1alpha1"},
                            {"kind", "HeartbeatRun"},
                            {"metadata",
                             {{"name", "bot-1"},
                              {"namespace", kNs},
                              {"annotations", {{kAnnotationAgentUid, "uid-bot"}}}}},
                            {"spec", {{"agentRef", {{"name", "bot"}}}}}};
      job["metadata"]["annotations"][kAnnotationAgentUid] = "uid-bot";
      job["metadata"]["annotations"][kAnnotationRunToMake] = carried.dump();
    }
    sources.at("jobs")->send(kube::WatchEventType::kAdded, job);
    ASSERT_FALSE(told.empty());
    EXPECT_EQ(told.back(), carries ? "team-a/bot-1 agent=bot job" : "team-a/bot-1 no run job");
  }
}

// After a restart the lists may come in any order: Pods and Jobs listed
// before their settled run are let go once the run is listed.
TEST(ClusterCache, ObjectsListedBeforeTheirSettledRunAreLetGoWhenItArrives) {
  Fixture f;
  f.jobs().list({owned(job_name_for_run("bot-1"), "2")});
  f.pods().list({owned("bot-1-x7k2p", "3")});
  EXPECT_TRUE(f.has_job());
  f.runs().list({run("Failed", true, "5")});
  EXPECT_FALSE(f.has_job());
  EXPECT_EQ(f.pods_of_run(), 0u);
  EXPECT_EQ(f.cache.runs_of(kNs, "bot").size(), 1u);

  // Once the run is deleted (its history trimmed) its objects are no longer
  // known as settled: a Job seen again is kept, as for a run not seen yet.
  f.runs().send(kube::WatchEventType::kDeleted, run("Failed", true, "6"));
  f.jobs().send(kube::WatchEventType::kModified, owned(job_name_for_run("bot-1"), "7"));
  EXPECT_TRUE(f.has_job());
}

// A settled run of bot's that finished at minute `m` with an output.
Json settled_run(int m, const std::string& rv) {
  const std::string stamp =
      "2026-11-27T06:" + std::string(m < 10 ? "0" : "") + std::to_string(m) + ":00Z";
  return {{"metadata",
           {{"name", "bot-" + std::to_string(m)}, {"namespace", kNs}, {"resourceVersion", rv}}},
          {"spec", {{"agentRef", {{"name", "bot"}}}}},
          {"status",
           {{"phase", "Succeeded"},
            {"costRecorded", true},
            {"finishedAt", stamp},
            {"output", "output of minute " + std::to_string(m)}}}};
}

Json agent(std::optional<int> context_runs, const std::string& rv) {
  Json a = {{"metadata", {{"name", "bot"}, {"namespace", kNs}, {"resourceVersion", rv}}},
            {"spec", {{"heartbeat", Json::object()}}}};
  if (context_runs) a["spec"]["heartbeat"]["contextRuns"] = *context_runs;
  return a;
}

// The minutes of bot's cached runs that still carry their output; a run
// without one is marked as dropped.
std::vector<int> minutes_with_output(const ClusterCache& cache, bool each_had_one = true) {
  std::vector<int> out;
  for (const Json& r : cache.runs_of(kNs, "bot")) {
    const std::string name = string_at(r, "metadata/name");
    if (!string_at(r, "status/output").empty()) {
      out.push_back(std::stoi(name.substr(4)));
    } else if (each_had_one) {
      EXPECT_TRUE(output_dropped(r)) << name;
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

// What the metrics scrape reads: every cached Agent once, as stored.
TEST(ClusterCache, ForEachAgentVisitsEveryCachedAgentOnce) {
  Fixture f;
  Json other = agent(5, "2");
  other["metadata"]["name"] = "other";
  f.agents().send(kube::WatchEventType::kAdded, agent(2, "1"));
  f.agents().send(kube::WatchEventType::kAdded, other);
  std::vector<std::string> seen;
  f.cache.for_each_agent([&](const Json& a) {
    seen.push_back(string_at(a, "metadata/name") + "@" + string_at(a, "metadata/resourceVersion"));
  });
  EXPECT_EQ(seen, (std::vector<std::string>{"bot@1", "other@2"}));
  EXPECT_EQ(f.cache.agent_count(), 2u);
}

// Only the newest contextRuns settled runs keep their output in the cache;
// as newer runs settle, older ones lose theirs.
TEST(ClusterCache, OnlyTheContextWindowsOutputsAreKept) {
  Fixture f;
  f.agents().send(kube::WatchEventType::kAdded, agent(std::nullopt, "1"));  // default 3
  for (int m = 1; m <= 5; ++m) {
    f.runs().send(kube::WatchEventType::kAdded, settled_run(m, std::to_string(10 + m)));
  }
  EXPECT_EQ(minutes_with_output(f.cache), (std::vector<int>{3, 4, 5}));
  // A run that finishes later but is listed by an earlier name still counts by time.
  Json late = settled_run(9, "30");
  late["metadata"]["name"] = "bot-0";
  f.runs().send(kube::WatchEventType::kAdded, late);
  EXPECT_EQ(minutes_with_output(f.cache), (std::vector<int>{0, 4, 5}));
  // Lowering contextRuns drops more; raising it restores nothing in the
  // cache (the reconciler reads those runs from the API server).
  f.agents().send(kube::WatchEventType::kModified, agent(1, "2"));
  EXPECT_EQ(minutes_with_output(f.cache), (std::vector<int>{0}));
  f.agents().send(kube::WatchEventType::kModified, agent(20, "3"));
  EXPECT_EQ(minutes_with_output(f.cache), (std::vector<int>{0}));
  f.runs().send(kube::WatchEventType::kAdded, settled_run(10, "40"));
  EXPECT_EQ(minutes_with_output(f.cache), (std::vector<int>{0, 10}));
}

// A newer run that settles without any output still takes a place in the
// window, so the oldest kept output goes.
TEST(ClusterCache, ARunWithoutOutputStillTakesItsPlaceInTheWindow) {
  Fixture f;
  f.agents().send(kube::WatchEventType::kAdded, agent(2, "1"));
  f.runs().send(kube::WatchEventType::kAdded, settled_run(1, "11"));
  f.runs().send(kube::WatchEventType::kAdded, settled_run(2, "12"));
  Json silent = settled_run(3, "13");
  silent["status"].erase("output");
  f.runs().send(kube::WatchEventType::kAdded, silent);
  EXPECT_EQ(minutes_with_output(f.cache, false), (std::vector<int>{2}));
}

// After a restart the runs may be listed before their agent: every output is
// kept until the agent says how many its runs show, then the rest go.
TEST(ClusterCache, RunsListedBeforeTheirAgentKeepOutputsUntilItArrives) {
  Fixture f;
  std::vector<Json> runs;
  for (int m = 1; m <= 6; ++m) runs.push_back(settled_run(m, std::to_string(10 + m)));
  f.runs().list(runs);
  EXPECT_EQ(minutes_with_output(f.cache), (std::vector<int>{1, 2, 3, 4, 5, 6}));
  f.agents().list({agent(2, "1")});
  EXPECT_EQ(minutes_with_output(f.cache), (std::vector<int>{5, 6}));
  // Listed again with the agent known (a relist): the same.
  f.runs().list(runs);
  EXPECT_EQ(minutes_with_output(f.cache), (std::vector<int>{5, 6}));
}

// The Agents are listed before the rest, so the runs' list knows each
// agent's window.
TEST(ClusterCache, StartsTheAgentsFirst) {
  Fixture f;
  f.cache.start();
  ASSERT_FALSE(f.started.empty());
  EXPECT_EQ(f.started.front(), "agents");
  EXPECT_EQ(f.started.size(), f.sources.size());
}

// The rest wait for the Agents' list while its pages come, past the stall
// window in all; when no page comes they start anyway.
TEST(ClusterCache, TheRestWaitForTheAgentsListWhileItsPagesCome) {
  constexpr auto kStall = std::chrono::milliseconds(200);
  for (const bool pages_come : {true, false}) {
    std::map<std::string, HandFedSource*> sources;
    std::vector<std::string> started;
    CacheOptions o = options();
    o.agents_first_stall = kStall;
    ClusterCache cache(
        [&](const kube::Resource& r, const kube::InformerOptions& io) {
          auto source = std::make_unique<HandFedSource>(io, r.resource, started);
          if (r.resource == "agents") source->synced = false;
          sources[r.resource] = source.get();
          return source;
        },
        std::move(o), [](const std::string&) {});
    std::atomic<bool> listed{false};
    std::thread lister([&] {
      if (!pages_come) return;
      for (int page = 0; page < 40; ++page) {  // about two stall windows
        std::this_thread::sleep_for(kStall / 20);
        sources.at("agents")->listed += 500;
      }
      listed = true;
      sources.at("agents")->synced = true;
    });
    cache.start();
    EXPECT_EQ(listed.load(), pages_come);
    EXPECT_EQ(started.size(), sources.size());
    lister.join();
  }
}

// A relist names runs in key order, not finish order. A run listed later
// can push one listed earlier out of its agent's window; its output goes
// then, not after the whole list is in (with every output at its 4,000-byte
// limit, a fleet's relist held them all: 220.8 MiB at 10,000 agents). The
// result is what the same runs arriving as watch events leave.
TEST(ClusterCache, ARelistNeverHoldsMoreOutputsThanTheWindow) {
  constexpr int kContextRuns = 3;
  Fixture listed, watched;
  for (Fixture* f : {&listed, &watched}) {
    f->agents().send(kube::WatchEventType::kAdded, agent(kContextRuns, "1"));
  }
  // bot-a .. bot-p in key order, finishing at minutes that are not.
  std::vector<Json> runs;
  std::map<std::string, int> minute_of;
  for (int i = 0; i < 16; ++i) {
    const int minute = (i * 7 + 3) % 16;
    Json r = settled_run(minute, std::to_string(100 + i));
    const std::string name = std::string("bot-") + static_cast<char>('a' + i);
    r["metadata"]["name"] = name;
    minute_of[name] = minute;
    runs.push_back(r);
  }
  kube::Store::Replacement list = listed.runs().store_for_list().begin_replace();
  std::vector<int> listed_minutes;
  for (const Json& r : runs) {
    list.add(r);
    const std::string name = string_at(r, "metadata/name");
    listed_minutes.push_back(minute_of[name]);
    std::vector<int> holding;
    for (const auto& [other, minute] : minute_of) {
      auto kept = list.get(std::string(kNs) + "/" + other);
      if (kept && !string_at(*kept, "status/output").empty()) holding.push_back(minute);
    }
    std::vector<int> newest = listed_minutes;
    std::sort(newest.rbegin(), newest.rend());
    newest.resize(std::min<std::size_t>(newest.size(), kContextRuns));
    std::sort(newest.begin(), newest.end());
    std::sort(holding.begin(), holding.end());
    ASSERT_EQ(holding, newest) << "after " << name;
  }
  listed.runs().store_for_list().replace(std::move(list));
  for (const Json& r : runs) watched.runs().send(kube::WatchEventType::kAdded, r);
  EXPECT_EQ(listed.cache.runs_of(kNs, "bot"), watched.cache.runs_of(kNs, "bot"));
  EXPECT_EQ(listed.cache.runs_of(kNs, "bot").size(), 16u);
}

// A hostile or broken contextRuns (negative, huge, not a number) is clamped
// to the CRD's bounds: no output kept, or at most kContextRunsMax.
TEST(ClusterCache, AContextRunsOutOfBoundsIsClamped) {
  Fixture f;
  Json hostile = agent(std::nullopt, "1");
  hostile["spec"]["heartbeat"]["contextRuns"] = -7;
  f.agents().send(kube::WatchEventType::kAdded, hostile);
  for (int m = 1; m <= 3; ++m) {
    f.runs().send(kube::WatchEventType::kAdded, settled_run(m, std::to_string(10 + m)));
  }
  EXPECT_TRUE(minutes_with_output(f.cache).empty());
  hostile["spec"]["heartbeat"]["contextRuns"] = 1'000'000'000'000LL;
  f.agents().send(kube::WatchEventType::kModified, hostile);
  f.runs().send(kube::WatchEventType::kAdded, settled_run(4, "20"));
  EXPECT_EQ(minutes_with_output(f.cache), (std::vector<int>{4}));
  hostile["spec"]["heartbeat"]["contextRuns"] = "three";
  EXPECT_NO_THROW(f.agents().send(kube::WatchEventType::kModified, hostile));
}

// A start waits as long as the lists bring items (160,000 runs take
// minutes), and gives up only when nothing comes for the stall window.
// The agent's Lease as the runner (or anyone who may write it) left it.
Json lease_reporting(const std::string& run, int64_t input_tokens, const std::string& rv) {
  Json lease = {{"metadata",
                 {{"name", "bot-heartbeat"},
                  {"namespace", kNs},
                  {"resourceVersion", rv},
                  {"labels", {{kLabelManagedBy, kManagedByValue}}},
                  {"ownerReferences", Json::array({{{"kind", kAgentKind}, {"name", "bot"}}})}}}};
  lease["metadata"]["annotations"][api::kAnnotationUsage] =
      api::encode_usage_report({{2, input_tokens, 20, 1, 2}, run});
  return lease;
}

TEST(ClusterCache, AUsageReportRewrittenLowerKeepsTheHighestSeen) {
  Fixture f;
  f.runs().send(kube::WatchEventType::kAdded, run("Running", false, "1"));
  f.leases().send(kube::WatchEventType::kAdded, lease_reporting("bot-1", 3000, "2"));
  f.leases().send(kube::WatchEventType::kModified, lease_reporting("bot-1", 10, "3"));
  // The cache holds the newest version only: what a reconcile alone would read.
  EXPECT_EQ(api::decode_usage_report(
                annotation_at(*f.cache.lease(kNs, "bot-heartbeat"), api::kAnnotationUsage))
                .report->input_tokens,
            10);
  const std::optional<UsageCounts> high = f.cache.reported_usage(kNs, "bot-1");
  ASSERT_TRUE(high.has_value());
  EXPECT_EQ(high->input_tokens, 3000);
  EXPECT_EQ(high->output_tokens, 20);
}

// A beat that only renews the Lease queues no pass (the run's pass waits
// for its stall deadline and reads the newest beat then); a beat whose
// report raises the run's usage, or a Lease no running run reports on, does.
TEST(ClusterCache, ABeatThatRaisesNoUsageQueuesNoPass) {
  Fixture f;
  f.runs().send(kube::WatchEventType::kAdded, run("Running", false, "1"));
  f.leases().send(kube::WatchEventType::kAdded, lease_reporting("bot-1", 300, "2"));
  f.queued.clear();
  f.leases().send(kube::WatchEventType::kModified, lease_reporting("bot-1", 300, "3"));
  EXPECT_TRUE(f.queued.empty()) << "renewed, nothing new";
  f.leases().send(kube::WatchEventType::kModified, lease_reporting("bot-1", 200, "4"));
  EXPECT_TRUE(f.queued.empty()) << "a lower report raises nothing";
  f.leases().send(kube::WatchEventType::kModified, lease_reporting("bot-1", 301, "5"));
  EXPECT_EQ(f.queued, (std::vector<std::string>{kNs + std::string("/bot")}));
  f.queued.clear();
  f.leases().send(kube::WatchEventType::kModified, lease_reporting("made-up-run", 1, "6"));
  EXPECT_EQ(f.queued.size(), 1u) << "a report of no run going on is not a beat";
}

TEST(ClusterCache, OnlyRunsGoingOnOfTheLeasesAgentAreTracked) {
  Fixture f;
  f.runs().send(kube::WatchEventType::kAdded, run("Running", false, "1"));
  // Names no run, or a run of another agent: nothing kept (the map is bounded
  // by the runs going on, whatever a writer of the Lease puts there).
  f.leases().send(kube::WatchEventType::kAdded, lease_reporting("made-up-run", 5, "2"));
  EXPECT_FALSE(f.cache.reported_usage(kNs, "made-up-run").has_value());
  f.leases().send(kube::WatchEventType::kModified, lease_reporting("bot-1", 700, "3"));
  EXPECT_TRUE(f.cache.reported_usage(kNs, "bot-1").has_value());
  // Settled: forgotten (its charge is recorded).
  f.runs().send(kube::WatchEventType::kModified, run("Succeeded", true, "4"));
  EXPECT_FALSE(f.cache.reported_usage(kNs, "bot-1").has_value());
  f.leases().send(kube::WatchEventType::kModified, lease_reporting("bot-1", 900, "5"));
  EXPECT_FALSE(f.cache.reported_usage(kNs, "bot-1").has_value());
}

TEST(ClusterCache, SyncWaitsWhileListsMakeProgressAndGivesUpWhenTheyStall) {
  constexpr auto kStall = std::chrono::milliseconds(200);
  Fixture f;
  EXPECT_TRUE(f.cache.wait_for_sync_while_listing(kStall));

  f.runs().synced = false;
  EXPECT_FALSE(f.cache.wait_for_sync_while_listing(kStall));  // nothing listed

  std::atomic<bool> done{false};
  std::thread lister([&] {
    for (int page = 0; page < 40; ++page) {  // 40 pages over about 2 stall windows
      std::this_thread::sleep_for(kStall / 20);
      f.runs().listed += 500;
    }
    done = true;
    f.runs().synced = true;
  });
  const auto began = std::chrono::steady_clock::now();
  EXPECT_TRUE(f.cache.wait_for_sync_while_listing(kStall));
  EXPECT_TRUE(done);
  EXPECT_GT(std::chrono::steady_clock::now() - began, kStall);  // longer than one window
  lister.join();
}

}  // namespace
}  // namespace hb::controllers
