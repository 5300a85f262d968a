// The workers' client refuses every write once this replica is not the
// leader, before anything is sent; reads still go through.
#include <gtest/gtest.h>

#include <atomic>
#include <vector>

#include "kube/client.h"
#include "kube/resource.h"
#include "tests/support/counting_transport.h"

namespace hb::kube {
namespace {

using test::CountingTransport;

TEST(WriteGate, AClosedGateRefusesWritesBeforeSendingAndLetsReadsThrough) {
  auto transport = std::make_shared<CountingTransport>();
  ClusterConfig cluster;
  cluster.server = "https://api.invalid";
  ClientOptions options;
  options.qps = 0;
  Client client(cluster, options, transport);
  std::atomic<bool> leader{true};
  client.set_write_gate([&] { return leader.load(); });
  const Json cm = {{"metadata", {{"name", "x"}}}};
  client.create(resources::kConfigMaps, "ns", cm).or_throw();
  EXPECT_EQ(transport->sent, 1);
  leader = false;
  const std::vector<Result<Json>> refused = {
      client.create(resources::kConfigMaps, "ns", cm),
      client.replace(resources::kConfigMaps, "ns", "x", cm),
      client.merge_patch(resources::kConfigMaps, "ns", "x", cm),
      client.merge_patch_status(resources::kConfigMaps, "ns", "x", cm),
      client.remove(resources::kConfigMaps, "ns", "x")};
  for (const Result<Json>& r : refused) {
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().kind, ErrorKind::kNotLeader) << r.error().describe();
    EXPECT_NE(r.error().describe().find("configmaps ns/"), std::string::npos)
        << "names the request: " << r.error().describe();
  }
  EXPECT_EQ(transport->sent, 1);  // nothing left the process
  client.get(resources::kConfigMaps, "ns", "x").or_throw();
  EXPECT_EQ(transport->sent, 2);
  EXPECT_EQ(transport->last_method, "GET");
}

}  // namespace
}  // namespace hb::kube
