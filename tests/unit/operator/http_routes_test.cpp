// Which address answers which path (operator/http_routes.h).
#include "operator/http_routes.h"

#include <gtest/gtest.h>

#include "operator/wakeup.h"

namespace hb::operator_ {
namespace {

struct Routes {
  Endpoints endpoints{"0.0.0.0:8080", "0.0.0.0:8081", "0.0.0.0:8443"};
  bool synced = true;
  int wakeups = 0;
  RouteHandlers handlers{[] { return std::string("hb_up 1\n"); }, [this] { return synced; },
                         [this](const http::ServerRequest&) {
                           ++wakeups;
                           http::ServerResponse r;
                           r.status = 201;
                           r.body = "woken";
                           return r;
                         },
                         nullptr};

  http::ServerResponse get(const std::string& address, const std::string& path,
                           const std::string& method = "GET") {
    http::ServerRequest request;
    request.method = method;
    request.path = path;
    return route(endpoints, handlers, address, request);
  }
};

TEST(HttpRoutes, EachAddressAnswersItsOwnPaths) {
  Routes r;
  const auto metrics = r.get(r.endpoints.metrics_address, "/metrics");
  EXPECT_EQ(metrics.status, 200);
  EXPECT_EQ(metrics.body, "hb_up 1\n");
  EXPECT_EQ(metrics.content_type, "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_EQ(r.get(r.endpoints.health_address, "/healthz").body, "ok");
  EXPECT_EQ(r.get(r.endpoints.health_address, "/readyz").status, 200);
  EXPECT_EQ(
      r.get(r.endpoints.wakeup_address, "/api/v1/namespaces/a/agents/b/wakeup", "POST").status,
      201);
  EXPECT_EQ(r.wakeups, 1);
}

TEST(HttpRoutes, APathOnTheWrongAddressIsNotFound) {
  Routes r;
  EXPECT_EQ(r.get(r.endpoints.health_address, "/metrics").status, 404);
  EXPECT_EQ(r.get(r.endpoints.metrics_address, "/healthz").status, 404);
  EXPECT_EQ(r.get(r.endpoints.metrics_address, "/readyz").status, 404);
  EXPECT_EQ(r.get(r.endpoints.metrics_address, "/api/v1/namespaces/a/agents/b/wakeup").status, 404);
  EXPECT_EQ(r.get(r.endpoints.health_address, "/").body, "not found");
  EXPECT_EQ(r.wakeups, 0);
}

TEST(HttpRoutes, ReadyOnlyOnceTheCachesSynced) {
  Routes r;
  r.synced = false;
  const auto not_ready = r.get(r.endpoints.health_address, "/readyz");
  EXPECT_EQ(not_ready.status, 503);
  EXPECT_EQ(not_ready.body, "caches not synced");
  EXPECT_EQ(r.get(r.endpoints.health_address, "/healthz").status, 200) << "alive all the same";
  r.synced = true;
  EXPECT_EQ(r.get(r.endpoints.health_address, "/readyz").status, 200);
}

// Everything on one address: the named paths first, the rest to the wakeup
// service (which answers its own 404 for paths it does not know).
TEST(HttpRoutes, OneAddressForAllServesEveryPath) {
  Routes r;
  r.endpoints = {"127.0.0.1:9000", "127.0.0.1:9000", "127.0.0.1:9000"};
  EXPECT_EQ(r.get("127.0.0.1:9000", "/metrics").body, "hb_up 1\n");
  EXPECT_EQ(r.get("127.0.0.1:9000", "/healthz").body, "ok");
  EXPECT_EQ(r.get("127.0.0.1:9000", "/readyz").body, "ok");
  EXPECT_EQ(r.wakeups, 0);
  EXPECT_EQ(r.get("127.0.0.1:9000", "/anything").status, 201);
  EXPECT_EQ(r.wakeups, 1);
  EXPECT_EQ(listen_addresses(r.endpoints), std::vector<std::string>{"127.0.0.1:9000"});
}

TEST(HttpRoutes, EachAddressIsListenedOnOnceAndAnEmptyOneNotAtAll) {
  EXPECT_EQ(listen_addresses({"m:1", "h:2", "w:3"}),
            (std::vector<std::string>{"h:2", "m:1", "w:3"}));
  EXPECT_EQ(listen_addresses({"m:1", "m:1", ""}), std::vector<std::string>{"m:1"});
  EXPECT_EQ(listen_addresses({"m:1", "h:2", "h:2"}), (std::vector<std::string>{"h:2", "m:1"}));
}

TEST(HttpRoutes, OnlyTheWakeupAddressTakesABody) {
  const Endpoints e{"m:1", "h:2", "w:3"};
  EXPECT_EQ(limits_for(e, "m:1").body_bytes_max, 0u);
  EXPECT_EQ(limits_for(e, "h:2").body_bytes_max, 0u);
  EXPECT_EQ(limits_for(e, "w:3").body_bytes_max, kWakeupBodyBytesMax);
  EXPECT_EQ(limits_for({"a:1", "a:1", "a:1"}, "a:1").body_bytes_max, kWakeupBodyBytesMax);
}

// The servers really listen and route by the address they were made for.
TEST(HttpRoutes, StartedServersAnswerOnTheirAddresses) {
  Routes r;
  r.endpoints = {"127.0.0.1:0", "", ""};
  auto servers = start_servers(r.endpoints, r.handlers);
  ASSERT_EQ(servers.size(), 1u);
  const std::string base = "http://127.0.0.1:" + std::to_string(servers[0]->port());
  auto client = http::make_client({});
  const auto get = [&](const std::string& path) {
    return client->send({"GET", base + path, {}, "", std::chrono::seconds(5), nullptr});
  };
  EXPECT_EQ(get("/metrics").body, "hb_up 1\n");
  EXPECT_EQ(get("/healthz").status, 404) << "no health address configured";
  for (auto& s : servers) s->stop();
}

}  // namespace
}  // namespace hb::operator_
