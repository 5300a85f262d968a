// The cache keeps the Jobs and Pods of runs that can still change, and lets
// go of those of settled runs (final, cost recorded): at fleet size they
// were most of the operator's memory, and nothing decides from them.
#include "controllers/shell/cluster_cache.h"

#include <gtest/gtest.h>

#include "controllers/names.h"

namespace hb::controllers {
namespace {

constexpr const char* kNs = "team-a";

// A cache source the test feeds by hand: the Store an informer keeps, with
// the projection the cache asked for.
class HandFedSource final : public kube::CachedResource {
 public:
  explicit HandFedSource(const kube::InformerOptions& options) {
    if (options.projection) store_.set_projection(options.projection);
  }
  void set_handlers(kube::StoreHandlers handlers) override {
    store_.set_handlers(std::move(handlers));
  }
  void start() override {}
  void stop() override {}
  bool has_synced() const override { return true; }
  bool wait_for_sync(std::chrono::milliseconds) const override { return true; }
  const kube::Store& store() const override { return store_; }
  void reproject(const std::string& key) override { store_.reproject(key); }
  void send(kube::WatchEventType type, Json object) { store_.apply({type, std::move(object)}); }
  void list(std::vector<Json> objects) { store_.replace(std::move(objects)); }

 private:
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
  std::vector<std::string> queued;
  ClusterCache cache;
  Fixture()
      : cache(
            [this](const kube::Resource& r, const kube::InformerOptions& o) {
              auto source = std::make_unique<HandFedSource>(o);
              sources[r.resource] = source.get();
              return source;
            },
            options(), [this](const std::string& k) { queued.push_back(k); }) {}
  HandFedSource& runs() { return *sources.at("heartbeatruns"); }
  HandFedSource& jobs() { return *sources.at("jobs"); }
  HandFedSource& pods() { return *sources.at("pods"); }
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

}  // namespace
}  // namespace hb::controllers
