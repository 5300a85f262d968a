// The elector's term is timed on its injected clocks: holding() turns false
// exactly at the renew deadline, and renewTime is the wall clock's.
#include "operator/leader_election.h"

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

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

// A client of `server`, without a rate limit.
std::shared_ptr<kube::Client> client_of(std::shared_ptr<http::Client> server) {
  kube::ClusterConfig cluster;
  cluster.server = "https://api.invalid";
  kube::ClientOptions options;
  options.qps = 0;
  return std::make_shared<kube::Client>(cluster, options, std::move(server));
}

LeaderElectionConfig replica_a() {
  LeaderElectionConfig config;
  config.lease_namespace = "ops";
  config.lease_name = "hb-leader";
  config.identity = "replica-a";
  return config;
}

TEST(LeaderElector, HoldingEndsAtTheRenewDeadlineOfTheInjectedClock) {
  auto server = std::make_shared<LeaseServer>();
  auto client = client_of(server);
  const LeaderElectionConfig config = replica_a();
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

// An API server that keeps one Lease and refuses a write whose
// resourceVersion is not the stored one, as the real one does; it logs the
// methods it was sent.
class VersionedLeaseServer : public http::Client {
 public:
  http::Response send(const http::Request& request) override {
    std::lock_guard lock(mutex_);
    methods_.push_back(request.method);
    if (request.method == "GET") {
      if (lease_.is_null()) return {404, {}, kNotFound};
      return {200, {}, lease_.dump()};
    }
    controllers::Json body = controllers::Json::parse(request.body);
    const bool create = request.method == "POST";
    if (create ? !lease_.is_null()
               : controllers::string_at(body, "metadata/resourceVersion") !=
                     controllers::string_at(lease_, "metadata/resourceVersion")) {
      return {409, {}, kConflict};
    }
    body["metadata"]["resourceVersion"] = std::to_string(++version_);
    lease_ = body;
    if (!reply_versions) body["metadata"].erase("resourceVersion");
    return {create ? 201 : 200, {}, body.dump()};
  }
  http::Response stream(const http::Request&, const http::ChunkHandler&) override {
    return {404, {}, ""};
  }
  // Someone else writes the Lease (its holder unchanged): a new version.
  void touch() {
    std::lock_guard lock(mutex_);
    lease_["metadata"]["resourceVersion"] = std::to_string(++version_);
  }
  bool reply_versions = true;  // false: replies to writes carry no resourceVersion

  std::vector<std::string> take_methods() {
    std::lock_guard lock(mutex_);
    return std::exchange(methods_, {});
  }

 private:
  static constexpr const char* kNotFound =
      R"({"kind":"Status","status":"Failure","reason":"NotFound","code":404})";
  static constexpr const char* kConflict =
      R"({"kind":"Status","status":"Failure","reason":"Conflict","code":409})";
  std::mutex mutex_;
  controllers::Json lease_;
  int version_ = 0;
  std::vector<std::string> methods_;
};

// Within its term a leader renews with one write on top of the Lease it
// wrote last; a write by anyone else since then (409), or a term that
// lapsed, sends it back to reading the Lease first.
TEST(LeaderElector, ALeaderRenewsWithOneWriteAndReadsAgainAfterAConflict) {
  auto server = std::make_shared<VersionedLeaseServer>();
  auto client = client_of(server);
  const LeaderElectionConfig config = replica_a();
  std::atomic<int64_t> steady_ms{1'000'000};
  LeaderClocks clocks{[&] { return MonoTime{} + std::chrono::milliseconds(steady_ms.load()); },
                      [] { return controllers::TimePoint{} + 1000h; }};
  LeaderElector elector(client, config, clocks);
  using Methods = std::vector<std::string>;

  ASSERT_TRUE(elector.try_acquire_or_renew().value());
  EXPECT_EQ(server->take_methods(), (Methods{"GET", "POST"}));
  for (int i = 0; i < 3; ++i) {
    steady_ms += 2000;
    ASSERT_TRUE(elector.try_acquire_or_renew().value());
    EXPECT_EQ(server->take_methods(), (Methods{"PUT"})) << "renewal " << i;
  }

  server->touch();
  steady_ms += 2000;
  ASSERT_TRUE(elector.try_acquire_or_renew().value());
  EXPECT_EQ(server->take_methods(), (Methods{"PUT", "GET", "PUT"}));
  EXPECT_TRUE(elector.holding());

  // Past the renew deadline the term is over: read before writing.
  steady_ms += std::chrono::milliseconds(config.renew_deadline).count();
  EXPECT_FALSE(elector.holding());
  ASSERT_TRUE(elector.try_acquire_or_renew().value());
  EXPECT_EQ(server->take_methods(), (Methods{"GET", "PUT"}));
  steady_ms += 2000;
  ASSERT_TRUE(elector.try_acquire_or_renew().value());
  EXPECT_EQ(server->take_methods(), (Methods{"PUT"}));

  // A reply without a resourceVersion cannot make the next write
  // conditional: that renewal reads first.
  server->reply_versions = false;
  steady_ms += 2000;
  ASSERT_TRUE(elector.try_acquire_or_renew().value());
  EXPECT_EQ(server->take_methods(), (Methods{"PUT"}));
  steady_ms += 2000;
  ASSERT_TRUE(elector.try_acquire_or_renew().value());
  EXPECT_EQ(server->take_methods(), (Methods{"GET", "PUT"}));
}

}  // namespace
}  // namespace hb::operator_
