// The elector's term is timed on its injected clocks: holding() turns false
// exactly at the renew deadline, and renewTime is the wall clock's.
#include "operator/leader_election.h"

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>

#include "kube/client.h"

namespace hb::operator_ {
namespace {

using namespace std::chrono_literals;

// An API server without the Lease: GET 404, POST stores it.
class LeaseServer : public http::Client {
 public:
  http::Response send(const http::Request& request) override {
    std::lock_guard lock(mutex_);
    if (request.method == "POST") {
      created = controllers::Json::parse(request.body);
      return {201, {}, request.body};
    }
    return {404, {}, R"({"kind":"Status","status":"Failure","reason":"NotFound","code":404})"};
  }
  http::Response stream(const http::Request&, const http::ChunkHandler&) override {
    return {404, {}, ""};
  }
  controllers::Json lease() {
    std::lock_guard lock(mutex_);
    return created;
  }

 private:
  std::mutex mutex_;
  controllers::Json created;
};

TEST(LeaderElector, HoldingEndsAtTheRenewDeadlineOfTheInjectedClock) {
  auto server = std::make_shared<LeaseServer>();
  kube::ClusterConfig cluster;
  cluster.server = "https://api.invalid";
  kube::ClientOptions options;
  options.qps = 0;
  auto client = std::make_shared<kube::Client>(cluster, options, server);
  LeaderElectionConfig config;
  config.lease_namespace = "ops";
  config.lease_name = "hb-leader";
  config.identity = "replica-a";
  std::atomic<int64_t> steady_ms{1'000'000};
  const controllers::TimePoint wall =
      std::chrono::sys_days{std::chrono::year{2024} / 5 / 1} + 12h + 250ms;
  LeaderClocks clocks{[&] { return MonoTime{} + std::chrono::milliseconds(steady_ms.load()); },
                      [&] { return wall; }};
  LeaderElector elector(client, config, clocks);
  EXPECT_FALSE(elector.holding()) << "not before the Lease is taken";
  std::atomic<bool> stop{false};
  ASSERT_TRUE(elector.acquire(stop));
  EXPECT_TRUE(elector.holding());
  EXPECT_EQ(controllers::string_at(server->lease(), "spec/renewTime"),
            "2024-05-01T12:00:00.250000Z");
  EXPECT_EQ(controllers::string_at(server->lease(), "spec/holderIdentity"), "replica-a");
  steady_ms += std::chrono::milliseconds(config.renew_deadline).count() - 1;
  EXPECT_TRUE(elector.holding());
  steady_ms += 1;
  EXPECT_FALSE(elector.holding()) << "the renew deadline passed without a renewal";
}

}  // namespace
}  // namespace hb::operator_
