// A request that is not a dispatch stops waiting for the rate limiter at its
// GiveWayScope's time and is not sent (ErrorKind::kGaveWay); a dispatch, a
// request served in time and one outside any scope are sent as before.
#include <gtest/gtest.h>

#include <atomic>

#include "kube/client.h"
#include "kube/request_priority.h"
#include "kube/resource.h"
#include "tests/support/counting_transport.h"

namespace hb::kube {
namespace {

using namespace std::chrono_literals;
using Steady = std::chrono::steady_clock;

using test::CountingTransport;

// A rate-limited client over a counting transport. Saturated: the first
// write spends its whole burst (one token), so the next waits 1 / qps.
struct Limited {
  std::shared_ptr<CountingTransport> transport = std::make_shared<CountingTransport>();
  std::unique_ptr<Client> client;
  const Json cm = {{"metadata", {{"name", "x"}}}};
  Limited(double qps, int burst) {
    ClusterConfig cluster;
    cluster.server = "https://api.invalid";
    ClientOptions options;
    options.qps = qps;
    options.burst = burst;
    client = std::make_unique<Client>(cluster, options, transport);
  }
  Result<Json> write() { return client->replace(resources::kConfigMaps, "ns", "x", cm); }
};

struct Saturated : Limited {
  explicit Saturated(double qps) : Limited(qps, 1) { EXPECT_TRUE(write().ok()); }
};

TEST(GiveWay, AWriteWhoseTimeHasComeIsNotSentAndSaysWhy) {
  Saturated s(/*qps=*/1);
  RequestPriorityScope lifecycle(RequestClass::kLifecycle);
  GiveWayScope give_way(Steady::now() - 1ms);
  const Result<Json> r = s.write();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::kGaveWay);
  EXPECT_NE(r.error().describe().find("configmaps ns/x"), std::string::npos)
      << r.error().describe();
  EXPECT_EQ(s.transport->sent, 1) << "nothing left the process";
}

TEST(GiveWay, AWriteWaitingForItsTokenGivesWayWhenItsTimeComes) {
  Saturated s(/*qps=*/4);  // the next token in 250 ms
  RequestPriorityScope bookkeeping(RequestClass::kBookkeeping);
  GiveWayScope give_way(Steady::now() + 20ms);
  const Result<Json> r = s.write();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::kGaveWay);
  EXPECT_EQ(s.transport->sent, 1);
  // The ticket left the line: a dispatch after it is served at the next token.
  RequestPriorityScope dispatch(RequestClass::kDispatch);
  EXPECT_TRUE(s.write().ok());
  EXPECT_EQ(s.transport->sent, 2);
}

TEST(GiveWay, ADispatchNeverGivesWay) {
  Saturated s(/*qps=*/50);
  RequestPriorityScope dispatch(RequestClass::kDispatch);
  GiveWayScope give_way(Steady::now() - 1ms);
  EXPECT_TRUE(s.write().ok());
  EXPECT_EQ(s.transport->sent, 2);
}

TEST(GiveWay, ATokenAtHandIsSpentEvenPastTheTime) {
  Limited l(/*qps=*/1, /*burst=*/2);
  RequestPriorityScope lifecycle(RequestClass::kLifecycle);
  GiveWayScope give_way(Steady::now() - 1ms);
  EXPECT_TRUE(l.write().ok());
  EXPECT_TRUE(l.write().ok());
  EXPECT_EQ(l.transport->sent, 2) << "the burst was there: no wait, nothing to give way to";
}

TEST(GiveWay, OutsideAScopeAWriteWaitsForItsToken) {
  Saturated s(/*qps=*/50);
  {
    GiveWayScope give_way(Steady::now() - 1ms);
    EXPECT_EQ(current_give_way_time().has_value(), true);
  }
  EXPECT_FALSE(current_give_way_time().has_value()) << "the scope restored none";
  EXPECT_TRUE(s.write().ok());
  EXPECT_EQ(s.transport->sent, 2);
}

}  // namespace
}  // namespace hb::kube
