// The informer with a refused object in its list and in its watch (issue
// 55, item 3): the others are cached and the cache syncs; the refused one
// is reported by name; a stored copy that becomes too deep is dropped as
// if deleted; the watch goes on without a relist.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "kube/informer.h"
#include "kube/object_limits.h"

namespace hb::kube {
namespace {

using namespace std::chrono_literals;

std::string informer_agent(const std::string& name, int levels, const std::string& rv = "5") {
  std::string deep;
  for (int i = 5; i < levels; ++i) deep += R"({"a":)";
  deep += "1";
  for (int i = 5; i < levels; ++i) deep += "}";
  return R"({"metadata":{"name":")" + name + R"(","namespace":"team","uid":"0e0c-)" + name +
         R"(","resourceVersion":")" + rv +
         R"("},"spec":{"runtime":{"volumes":[{"name":"v","csi":)" + deep + "}]}}}";
}

// Plays the API server: one list answer, then one watch stream of `lines`;
// later watches end at once, empty.
class ListThenWatchServer : public http::Client {
 public:
  std::string list_body;
  std::vector<std::string> watch_lines;
  std::atomic<int> lists{0}, watches{0};

  http::Response send(const http::Request&) override {
    ++lists;
    return http::Response{200, {}, list_body};
  }
  http::Response stream(const http::Request&, const http::ChunkHandler& on_chunk) override {
    if (watches++ == 0) {
      for (const std::string& line : watch_lines) {
        // Each line in two pieces, cut mid-object, as a transport may.
        const std::string with_newline = line + "\n";
        const std::size_t half = with_newline.size() / 2;
        if (!on_chunk(std::string_view(with_newline).substr(0, half))) break;
        if (!on_chunk(std::string_view(with_newline).substr(half))) break;
      }
    } else {
      std::this_thread::sleep_for(20ms);
    }
    return http::Response{200, {}, ""};
  }
};

struct InformerFixture {
  std::shared_ptr<ListThenWatchServer> server = std::make_shared<ListThenWatchServer>();
  std::mutex mutex;
  std::vector<RefusedObject> refused;
  std::vector<std::string> changed;
  std::unique_ptr<Informer> informer;

  void start() {
    ClusterConfig cluster;
    cluster.server = "https://api.invalid";
    ClientOptions unlimited;
    unlimited.qps = 0;
    auto client = std::make_shared<Client>(cluster, unlimited, server);
    InformerOptions options;
    options.on_refused = [this](const RefusedObject& r) {
      std::lock_guard lock(mutex);
      refused.push_back(r);
    };
    informer = std::make_unique<Informer>(client, resources::kAgents, options);
    StoreHandlers handlers;
    handlers.on_change = [this](const std::string& key) {
      std::lock_guard lock(mutex);
      changed.push_back(key);
    };
    informer->set_handlers(std::move(handlers));
    informer->start();
  }
  bool wait_for(const std::function<bool()>& done) {
    for (auto deadline = std::chrono::steady_clock::now() + 5s;
         std::chrono::steady_clock::now() < deadline; std::this_thread::sleep_for(5ms)) {
      std::lock_guard lock(mutex);
      if (done()) return true;
    }
    return false;
  }
};

std::string informer_page(const std::vector<std::string>& items) {
  std::string body = R"({"kind":"AgentList","metadata":{"resourceVersion":"10"},"items":[)";
  for (std::size_t i = 0; i < items.size(); ++i) body += (i ? "," : "") + items[i];
  return body + "]}";
}

TEST(InformerRefusal, ATooDeepListItemIsSkippedAndTheCacheSyncs) {
  InformerFixture f;
  f.server->list_body = informer_page(
      {informer_agent("good-1", 8), informer_agent("bad", 130), informer_agent("good-2", 8)});
  f.start();
  ASSERT_TRUE(f.informer->wait_for_sync(5s));
  EXPECT_EQ(f.informer->store().keys(), (std::vector<std::string>{"team/good-1", "team/good-2"}));
  ASSERT_TRUE(f.wait_for([&] { return f.refused.size() == 1; }));
  EXPECT_EQ(f.refused[0].metadata.name, "bad");
  EXPECT_EQ(f.refused[0].metadata.namespace_, "team");
  EXPECT_EQ(f.refused[0].reason, RefusalReason::kTooDeep);
  EXPECT_EQ(f.refused[0].resource, "agents.heartbeat.dev");
  EXPECT_EQ(f.informer->stats().errors, 0u);
}

TEST(InformerRefusal, AWatchedObjectThatBecomesTooDeepIsDroppedAndTheWatchGoesOn) {
  InformerFixture f;
  f.server->list_body = informer_page({informer_agent("good-1", 8), informer_agent("good-2", 8)});
  f.server->watch_lines = {
      // good-1 edited past the bound: the fast scanner declines it, the
      // full decoder alone would take it.
      R"({"type":"MODIFIED","object":)" + informer_agent("good-1", 130, "11") + "}",
      // Malformed inside a sound event.
      R"({"type":"ADDED","object":{"metadata":{"name":"bad-utf8","namespace":"team",)"
      R"("resourceVersion":"12"},"x":")" +
          std::string("\xff\xfe") + "\"}}",
      // Afterwards the watch still reads, on the fast path and the slow.
      R"({"type":"ADDED","object":)" + informer_agent("good-3", 8, "13") + "}",
      R"({"type":"ADDED","object":{"metadata":{"name":"good-\u0034","namespace":"team",)"
      R"("resourceVersion":"14"}}})",
  };
  f.start();
  ASSERT_TRUE(f.informer->wait_for_sync(5s));
  ASSERT_TRUE(f.wait_for([&] { return f.informer->store().contains("team/good-4"); }));
  EXPECT_EQ(f.informer->store().keys(),
            (std::vector<std::string>{"team/good-2", "team/good-3", "team/good-4"}));
  ASSERT_TRUE(f.wait_for([&] { return f.refused.size() == 2; }));
  EXPECT_EQ(f.refused[0].metadata.name, "good-1");
  EXPECT_EQ(f.refused[0].reason, RefusalReason::kTooDeep);
  EXPECT_EQ(f.refused[1].metadata.name, "bad-utf8");
  EXPECT_EQ(f.refused[1].reason, RefusalReason::kMalformed);
  {
    std::lock_guard lock(f.mutex);  // the drop was told to readers
    EXPECT_EQ(std::count(f.changed.begin(), f.changed.end(), "team/good-1"), 2);
  }
  EXPECT_EQ(f.server->lists, 1);  // no relist
  EXPECT_EQ(f.informer->stats().errors, 0u);
  EXPECT_EQ(f.informer->last_resource_version(), "14");
}

// Positive control: an event line that is not one event still breaks the
// stream, and the informer lists again.
TEST(InformerRefusal, ControlABrokenEventStillRelists) {
  InformerFixture f;
  f.server->list_body = informer_page({informer_agent("good-1", 8)});
  f.server->watch_lines = {R"({"type":"ADDED","object":)" + informer_agent("cut", 130)};
  f.start();
  ASSERT_TRUE(f.informer->wait_for_sync(5s));
  ASSERT_TRUE(f.wait_for([&] { return f.server->lists >= 2; }));
  EXPECT_GE(f.informer->stats().errors, 1u);
}

}  // namespace
}  // namespace hb::kube
