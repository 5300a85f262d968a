// The Lease and ConfigMap adapters against a scripted HTTP transport.
#include "runner/kube_adapters.h"

#include <gtest/gtest.h>

#include <deque>

#include "api/agent_objects.h"
#include "api/object_names.h"
#include "api/rfc3339.h"
#include "kube/client.h"

namespace hb::runner {
namespace {

using nlohmann::json;

class ScriptedTransport final : public http::Client {
 public:
  http::Response send(const http::Request& request) override {
    requests.push_back(request);
    if (responses.empty()) return {500, {}, "{}"};
    auto response = responses.front();
    responses.pop_front();
    return response;
  }
  http::Response stream(const http::Request& request, const http::ChunkHandler&) override {
    return send(request);
  }
  std::deque<http::Response> responses;
  std::vector<http::Request> requests;
};

http::Response status(int code, const std::string& reason) {
  return {code,
          {},
          json{{"kind", "Status"},
               {"apiVersion", "v1"},
               {"status", "Failure"},
               {"reason", reason},
               {"message", reason},
               {"code", code}}
              .dump()};
}

struct KubeHarness {
  std::shared_ptr<ScriptedTransport> transport = std::make_shared<ScriptedTransport>();
  kube::Client client;
  KubeHarness()
      : client(
            [] {
              kube::ClusterConfig config;
              config.server = "https://127.0.0.1:6443";
              config.token = "t";
              return config;
            }(),
            kube::ClientOptions{0, 1, std::chrono::seconds(5), "test"}, transport) {}
  std::string method(std::size_t i) const { return transport->requests.at(i).method; }
  std::string url(std::size_t i) const { return transport->requests.at(i).url; }
  json body(std::size_t i) const { return json::parse(transport->requests.at(i).body); }
};

TEST(KubeLeaseRenewer, PatchesRenewTime) {
  KubeHarness h;
  h.transport->responses.push_back({200, {}, "{}"});
  KubeLeaseRenewer renewer(h.client, "agents", "scout-heartbeat", "scout-2", "scout");
  ASSERT_TRUE(
      renewer
          .renew(*api::parse_rfc3339("2024-05-01T12:00:00.5Z"), std::chrono::seconds(300), nullptr)
          .ok());
  ASSERT_EQ(h.transport->requests.size(), 1u);
  EXPECT_EQ(h.method(0), "PATCH");
  EXPECT_NE(h.url(0).find("/apis/coordination.k8s.io/v1/namespaces/agents/leases/scout-heartbeat"),
            std::string::npos);
  auto spec = h.body(0)["spec"];
  EXPECT_EQ(spec["renewTime"], "2024-05-01T12:00:00.500000Z");
  EXPECT_EQ(spec["leaseDurationSeconds"], 300);
  EXPECT_EQ(spec["holderIdentity"], "scout-2");
}

TEST(KubeLeaseRenewer, CreatesAMissingLease) {
  KubeHarness h;
  h.transport->responses.push_back(status(404, "NotFound"));
  h.transport->responses.push_back({201, {}, "{}"});
  KubeLeaseRenewer renewer(h.client, "agents", "scout-heartbeat", "scout-2", "scout");
  ASSERT_TRUE(
      renewer.renew(*api::parse_rfc3339("2024-05-01T12:00:00Z"), std::chrono::seconds(300), nullptr)
          .ok());
  ASSERT_EQ(h.transport->requests.size(), 2u);
  EXPECT_EQ(h.method(1), "POST");
  auto lease = h.body(1);
  EXPECT_EQ(lease["kind"], "Lease");
  EXPECT_EQ(lease["metadata"]["labels"]["heartbeat.dev/agent"], "scout");
  EXPECT_EQ(lease["spec"]["acquireTime"], "2024-05-01T12:00:00.000000Z");
}

// The objects the runner creates when they are missing carry the operator's
// labels (api/agent_objects.h), valid for any agent name, so the operator's
// label-selected caches see them.
TEST(KubeAdapters, FallbackObjectsCarryTheOperatorsLabelsForAnyName) {
  const std::string agent = std::string(70, 'a') + ".team";
  KubeHarness h;
  h.transport->responses.push_back(status(404, "NotFound"));
  h.transport->responses.push_back({201, {}, "{}"});
  h.transport->responses.push_back(
      {201, {}, json{{"metadata", {{"resourceVersion", "1"}}}}.dump()});
  KubeLeaseRenewer renewer(h.client, "agents", "l", "r", agent);
  ASSERT_TRUE(
      renewer.renew(*api::parse_rfc3339("2024-05-01T12:00:00Z"), std::chrono::seconds(300), nullptr)
          .ok());
  KubeMemoryStore store(h.client, "agents", "m", agent);
  ASSERT_TRUE(store.save({{"notes", "x", 10}}, "").ok());
  for (std::size_t i : {1u, 2u}) {
    const json labels = h.body(i)["metadata"]["labels"];
    EXPECT_EQ(labels, json(api::agent_object_labels(agent)));
    EXPECT_EQ(labels["app.kubernetes.io/managed-by"], "heartbeat-operator");
    EXPECT_TRUE(api::is_dns1123_label(labels["heartbeat.dev/agent"].get<std::string>()));
  }
}

TEST(KubeLeaseRenewer, OtherErrorsAreErrors) {
  KubeHarness h;
  h.transport->responses.push_back(status(403, "Forbidden"));
  KubeLeaseRenewer renewer(h.client, "agents", "l", "r", "a");
  const kube::Done renewed = renewer.renew(*api::parse_rfc3339("2024-05-01T12:00:00Z"),
                                           std::chrono::seconds(300), nullptr);
  ASSERT_FALSE(renewed.ok());
  EXPECT_EQ(renewed.error().kind, kube::ErrorKind::kForbidden);
}

TEST(KubeMemoryStore, MissingConfigMapIsCreatedOnFirstSave) {
  KubeHarness h;
  h.transport->responses.push_back(status(404, "NotFound"));
  h.transport->responses.push_back(
      {201, {}, json{{"metadata", {{"resourceVersion", "7"}}}}.dump()});
  KubeMemoryStore store(h.client, "agents", "scout-memory", "scout");
  EXPECT_FALSE(store.load().value().has_value());
  EXPECT_EQ(store.save({{"notes", "x", 10}}, "").value(), "7");
  EXPECT_EQ(h.method(1), "POST");
  auto object = h.body(1);
  EXPECT_EQ(object["metadata"]["name"], "scout-memory");
  EXPECT_EQ(decode_memory_blocks(object["data"]["blocks.json"]).blocks,
            (MemoryBlocks{{"notes", "x", 10}}));
}

TEST(KubeMemoryStore, ReplaceKeepsOtherKeysAndSendsTheResourceVersion) {
  KubeHarness h;
  json existing = {
      {"apiVersion", "v1"},
      {"kind", "ConfigMap"},
      {"metadata",
       {{"name", "scout-memory"},
        {"namespace", "agents"},
        {"resourceVersion", "41"},
        {"ownerReferences", json::array({{{"name", "scout"}}})}}},
      {"data",
       {{"blocks.json", R"([{"label":"notes","value":"old","limit":50}])"}, {"other", "keep"}}}};
  h.transport->responses.push_back({200, {}, existing.dump()});
  json saved = existing;
  saved["metadata"]["resourceVersion"] = "42";
  h.transport->responses.push_back({200, {}, saved.dump()});
  h.transport->responses.push_back(status(409, "Conflict"));
  KubeMemoryStore store(h.client, "agents", "scout-memory", "scout");
  auto snapshot = store.load().value();
  ASSERT_TRUE(snapshot.has_value());
  EXPECT_EQ(snapshot->resource_version, "41");
  EXPECT_EQ(snapshot->blocks.at(0).value, "old");
  EXPECT_EQ(store.save({{"notes", "new", 50}}, "41").value(), "42");
  EXPECT_EQ(h.method(1), "PUT");
  auto put = h.body(1);
  EXPECT_EQ(put["metadata"]["resourceVersion"], "41");
  EXPECT_EQ(put["data"]["other"], "keep");
  EXPECT_EQ(put["metadata"]["ownerReferences"][0]["name"], "scout");
  const kube::Result<std::string> stale = store.save({{"notes", "newer", 50}}, "42");
  ASSERT_FALSE(stale.ok());
  EXPECT_TRUE(is_memory_conflict(stale.error()));
}

}  // namespace
}  // namespace hb::runner
