// The informer through API-server restarts and etcd compaction. These tests
// stop and start kube-apiserver, so ctest runs them alone (RUN_SERIAL).
#include <sys/wait.h>

#include "kube/informer.h"
#include "tests/integration/kube/cluster.h"

namespace hb::kube {
namespace {

using namespace hb::kube::testing;

std::string control_plane(const std::string& verb) {
  std::string cmd = "bash " + env_or_die("HB_SOURCE_DIR") + "/tests/e2e/control-plane.sh " + verb +
                    " " + env_or_die("HB_CONTROL_PLANE_DIR") + " 2>/dev/null";
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) throw std::runtime_error("cannot run " + cmd);
  std::string out;
  char buf[256];
  while (fgets(buf, sizeof buf, pipe) != nullptr) out += buf;
  int status = pclose(pipe);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) throw std::runtime_error(cmd + " failed");
  return out;
}

// A transport that can be cut off: while partitioned, new requests fail as a
// refused connection would, and open streams end at their next chunk.
class PartitionableTransport : public http::Client {
 public:
  explicit PartitionableTransport(std::shared_ptr<http::Client> inner) : inner_(std::move(inner)) {}
  void set_partitioned(bool p) { partitioned_ = p; }

  http::Response send(const http::Request& r) override {
    check(r);
    return inner_->send(r);
  }
  http::Response stream(const http::Request& r, const http::ChunkHandler& on_chunk) override {
    check(r);
    return inner_->stream(r,
                          [&](std::string_view chunk) { return !partitioned_ && on_chunk(chunk); });
  }

 private:
  void check(const http::Request& r) {
    if (partitioned_)
      throw http::TransportError(http::TransportError::Kind::kConnect, r.url + ": partitioned");
  }
  std::shared_ptr<http::Client> inner_;
  std::atomic<bool> partitioned_{false};
};

struct Recorder {
  std::mutex mu;
  std::vector<std::string> log;
  void add(const std::string& s) {
    std::lock_guard l(mu);
    log.push_back(s);
  }
  bool has(const std::string& s) {
    std::lock_guard l(mu);
    return std::find(log.begin(), log.end(), s) != log.end();
  }
  StoreHandlers handlers() {
    auto name = [](const Json& o) { return o["metadata"]["name"].get<std::string>(); };
    return {[=, this](const Json& o) { add("add " + name(o)); },
            [=, this](const Json&, const Json& o) { add("update " + name(o)); },
            [=, this](const Json& o) { add("delete " + name(o)); }};
  }
};

class DisruptionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    client_ = make_test_client();
    apply_crds(*client_);
    ns_ = unique_namespace("hb-it-disrupt");
    create_namespace(*client_, ns_);
  }
  void TearDown() override { delete_namespace(*client_, ns_); }

  std::shared_ptr<Client> client_;
  std::string ns_;
};

TEST_F(DisruptionTest, WatchSurvivesApiServerRestart) {
  InformerOptions options;
  options.namespace_ = ns_;
  Informer informer(make_test_client(), resources::kAgents, options);
  Recorder rec;
  informer.set_handlers(rec.handlers());
  informer.start();
  ASSERT_TRUE(informer.wait_for_sync(std::chrono::seconds(20)));
  client_->create(resources::kAgents, ns_, agent_manifest("before")).or_throw();
  ASSERT_TRUE(eventually([&] { return rec.has("add before"); }));

  control_plane("restart-apiserver");

  client_ = make_test_client();
  client_->create(resources::kAgents, ns_, agent_manifest("after")).or_throw();
  client_->remove(resources::kAgents, ns_, "before").or_throw();
  EXPECT_TRUE(eventually([&] { return rec.has("add after") && rec.has("delete before"); },
                         std::chrono::seconds(60)));
  EXPECT_GE(informer.stats().errors + informer.stats().watches, 2u);
  EXPECT_TRUE(informer.store().get(ns_ + "/after").has_value());
  EXPECT_FALSE(informer.store().get(ns_ + "/before").has_value());
  informer.stop();
}

TEST_F(DisruptionTest, RelistAfterCompactionSeesMissedDeletes) {
  auto transport = std::make_shared<PartitionableTransport>(std::shared_ptr<http::Client>(
      http::make_client({client_->config().tls, client_->config().ca_description})));
  ClientOptions client_options;
  client_options.qps = 0;
  auto informer_client = std::make_shared<Client>(client_->config(), client_options, transport);
  InformerOptions options;
  options.namespace_ = ns_;
  Informer informer(informer_client, resources::kAgents, options);
  Recorder rec;
  informer.set_handlers(rec.handlers());

  client_->create(resources::kAgents, ns_, agent_manifest("doomed")).or_throw();
  informer.start();
  ASSERT_TRUE(informer.wait_for_sync(std::chrono::seconds(20)));
  ASSERT_TRUE(rec.has("add doomed"));

  // Cut the informer off, change things it cannot see, then make its
  // resourceVersion unusable: compact etcd and restart the API server so the
  // watch cache starts after it.
  transport->set_partitioned(true);
  client_->create(resources::kAgents, ns_, agent_manifest("born-while-away")).or_throw();
  client_->remove(resources::kAgents, ns_, "doomed").or_throw();
  for (int i = 0; i < 5; ++i) {  // churn elsewhere to move the revision on
    client_
        ->merge_patch(resources::kAgents, ns_, "born-while-away",
                      {{"metadata", {{"annotations", {{"churn", std::to_string(i)}}}}}})
        .or_throw();
  }
  std::string revision = control_plane("compact");
  EXPECT_FALSE(revision.empty());
  control_plane("restart-apiserver");
  transport->set_partitioned(false);

  EXPECT_TRUE(eventually([&] { return rec.has("delete doomed") && rec.has("add born-while-away"); },
                         std::chrono::seconds(90)))
      << ::testing::PrintToString(rec.log);
  EXPECT_GE(informer.stats().relists_after_gone, 1u)
      << "the informer should have met a 410 and relisted";
  EXPECT_EQ(informer.store().size(), 1u);
  informer.stop();
}

TEST_F(DisruptionTest, WatchFromCompactedVersionIsGone) {
  Json a = client_->create(resources::kAgents, ns_, agent_manifest("old")).or_throw();
  std::string old_rv = a["metadata"]["resourceVersion"];
  for (int i = 0; i < 3; ++i) {
    client_
        ->merge_patch(resources::kAgents, ns_, "old",
                      {{"metadata", {{"annotations", {{"n", std::to_string(i)}}}}}})
        .or_throw();
  }
  control_plane("compact");
  control_plane("restart-apiserver");
  client_ = make_test_client();
  WatchOptions options;
  options.resource_version = old_rv;
  options.timeout_seconds = 5;
  bool gone = false;
  std::string detail;
  try {
    LineSplitter splitter;
    client_
        ->watch(resources::kAgents, ns_, options,
                [&](std::string_view chunk) {
                  const Done fed = splitter.feed(chunk, [&](std::string_view line) {
                    const Result<WatchEvent> e = decode_watch_event(line);
                    if (e.ok() && e.value().type == WatchEventType::kError) {
                      const Error err = error_from_status(e.value().object, "watch");
                      gone = err.kind == ErrorKind::kGone;
                      detail = err.describe();
                    }
                  });
                  return fed.ok() && !gone;
                })
        .or_throw();
  } catch (const ApiError& e) {  // some servers answer 410 before the stream
    gone = e.kind() == ErrorKind::kGone;
    detail = e.what();
  }
  EXPECT_TRUE(gone) << detail;
}

}  // namespace
}  // namespace hb::kube
