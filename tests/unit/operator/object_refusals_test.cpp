// What the operator does with a refused object: the counter, and one
// Warning Event ObjectRefused naming the limit (never the content), only on
// an object it can address.
#include "operator/object_refusals.h"

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

namespace hb::operator_ {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

kube::RefusedObject refused_agent(const std::string& name, const std::string& rv = "7") {
  kube::RefusedObject r;
  r.resource = "agents.heartbeat.dev";
  r.reason = kube::RefusalReason::kTooDeep;
  r.metadata.namespace_ = "team-a";
  r.metadata.name = name;
  r.metadata.uid = "0e0c2a8e-1111-4c0a-9d8e-6f1f2b7c9a10";
  r.metadata.resource_version = rv;
  r.bytes = 4096;
  return r;
}

const auto kNow = std::chrono::system_clock::time_point{} + 24h * 20000;

TEST(ObjectRefusals, TheEventNamesTheObjectAndTheLimit) {
  const std::optional<json> e = refusal_event(refused_agent("deep"), kNow, 1);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ((*e)["metadata"]["namespace"], "team-a");
  EXPECT_EQ((*e)["involvedObject"]["kind"], "Agent");
  EXPECT_EQ((*e)["involvedObject"]["apiVersion"], "heartbeat.dev/v1alpha1");
  EXPECT_EQ((*e)["involvedObject"]["name"], "deep");
  EXPECT_EQ((*e)["involvedObject"]["uid"], "0e0c2a8e-1111-4c0a-9d8e-6f1f2b7c9a10");
  EXPECT_EQ((*e)["reason"], "ObjectRefused");
  EXPECT_EQ((*e)["type"], "Warning");
  const std::string message = (*e)["message"];
  EXPECT_NE(message.find("nested more than 128"), std::string::npos) << message;
  EXPECT_NE(message.find("spec.runtime.volumes"), std::string::npos) << message;
  EXPECT_LE((*e)["metadata"]["name"].get<std::string>().size(), 253u);
}

TEST(ObjectRefusals, NoEventForWhatCannotBeAddressed) {
  kube::RefusedObject r = refused_agent("x\r\nHost: a");
  EXPECT_FALSE(refusal_event(r, kNow, 1).has_value());
  r = refused_agent("fine");
  r.metadata.uid.clear();
  EXPECT_FALSE(refusal_event(r, kNow, 1).has_value());
  r = refused_agent("fine");
  r.resource = "secrets";
  EXPECT_FALSE(refusal_event(r, kNow, 1).has_value());
  r = refused_agent(std::string(253, 'a'));  // the longest name still fits
  const auto e = refusal_event(r, kNow, 1);
  ASSERT_TRUE(e.has_value());
  EXPECT_LE((*e)["metadata"]["name"].get<std::string>().size(), 253u);
}

class EventSink : public http::Client {
 public:
  std::mutex mutex;
  std::vector<json> posted;
  http::Response send(const http::Request& r) override {
    std::lock_guard lock(mutex);
    posted.push_back(json::parse(r.body));
    return http::Response{201, {}, r.body};
  }
  http::Response stream(const http::Request& r, const http::ChunkHandler&) override {
    return send(r);
  }
  std::size_t count() {
    std::lock_guard lock(mutex);
    return posted.size();
  }
};

TEST(ObjectRefusals, EveryRefusalCountsAndEachObjectVersionGetsOneEvent) {
  auto sink = std::make_shared<EventSink>();
  kube::ClusterConfig cluster;
  cluster.server = "https://api.invalid";
  kube::ClientOptions unlimited;
  unlimited.qps = 0;
  auto client = std::make_shared<kube::Client>(cluster, unlimited, sink);
  controllers::Metrics metrics;
  const controllers::Labels deep = {{"resource", "agents.heartbeat.dev"}, {"reason", "too_deep"}};
  {
    ObjectRefusalReporter reporter(client, metrics, [] { return kNow; });
    EXPECT_EQ(metrics.value(kObjectsRefusedMetric, deep), 0);  // there from the start
    reporter.report(refused_agent("deep"));
    reporter.report(refused_agent("deep"));       // a relist refuses it again
    reporter.report(refused_agent("deep", "8"));  // edited, still too deep
    kube::RefusedObject unnamed = refused_agent("");
    reporter.report(unnamed);
    for (int i = 0; i < 200 && sink->count() < 2; ++i) std::this_thread::sleep_for(10ms);
    std::this_thread::sleep_for(50ms);
  }
  EXPECT_EQ(metrics.value(kObjectsRefusedMetric, deep), 4);
  ASSERT_EQ(sink->count(), 2u);
  EXPECT_EQ(sink->posted[0]["involvedObject"]["name"], "deep");
  EXPECT_NE(sink->posted[0]["metadata"]["name"], sink->posted[1]["metadata"]["name"]);
  EXPECT_NE(metrics.render().find("heartbeat_objects_refused_total{"), std::string::npos);
}

}  // namespace
}  // namespace hb::operator_
