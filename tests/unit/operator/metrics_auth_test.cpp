// /metrics authenticated and authorised by the API server (operator/metrics_auth.h),
// with the reviews played by fakes that answer as kube-apiserver does.
#include "operator/metrics_auth.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

#include "kube/request_priority.h"
#include "operator/http_routes.h"

namespace hb::operator_ {
namespace {

using controllers::Json;
using Clock = MetricsAuthorizer::Clock;

struct FakeApi {
  std::map<std::string, std::string> users{{"scraper-token", "system:serviceaccount:mon:prom"},
                                           {"nobody-token", "system:serviceaccount:team:bot"}};
  std::set<std::string> allowed{"system:serviceaccount:mon:prom"};
  int token_reviews = 0, access_reviews = 0;
  bool down = false;
  Json last_access_review;
  kube::RequestClass seen_class = kube::RequestClass::kLifecycle;
  Clock::time_point now{};

  MetricsAuthorizer make() {
    return MetricsAuthorizer(
        [this](const Json& body) -> kube::Result<Json> {
          ++token_reviews;
          seen_class = kube::current_request_priority().cls;
          if (down) {
            kube::Error e;
            e.kind = kube::ErrorKind::kServerError;
            return e;
          }
          Json out = body;
          auto it = users.find(body["spec"]["token"].get<std::string>());
          out["status"] = it == users.end() ? Json{{"authenticated", false}}
                                            : Json{{"authenticated", true},
                                                   {"user",
                                                    {{"username", it->second},
                                                     {"uid", "uid-1"},
                                                     {"groups", {"system:serviceaccounts"}}}}};
          return out;
        },
        [this](const Json& body) -> kube::Result<Json> {
          ++access_reviews;
          last_access_review = body;
          Json out = body;
          out["status"] = {{"allowed", allowed.count(body["spec"]["user"].get<std::string>()) > 0}};
          return out;
        },
        [this] { return now; });
  }
};

http::ServerRequest scrape(const std::string& token) {
  http::ServerRequest r;
  r.method = "GET";
  r.path = "/metrics";
  if (!token.empty()) r.headers["authorization"] = "Bearer " + token;
  return r;
}

TEST(MetricsAuth, AScraperWithGetOnTheMetricsUrlIsServed) {
  FakeApi api;
  MetricsAuthorizer auth = api.make();
  EXPECT_EQ(auth.check(scrape("scraper-token")), MetricsAccess::kAllowed);
  const Json& spec = api.last_access_review["spec"];
  EXPECT_EQ(spec["user"], "system:serviceaccount:mon:prom");
  EXPECT_EQ(spec["groups"], Json::array({"system:serviceaccounts"}));
  EXPECT_EQ(spec["uid"], "uid-1");
  EXPECT_EQ(spec["nonResourceAttributes"], Json({{"path", "/metrics"}, {"verb", "get"}}));
  EXPECT_EQ(api.last_access_review["kind"], "SubjectAccessReview");
  EXPECT_EQ(api.seen_class, kube::RequestClass::kEdge);
}

TEST(MetricsAuth, NoTokenAnUnknownOneAndAnUnauthorisedUserAreRefused) {
  FakeApi api;
  MetricsAuthorizer auth = api.make();
  EXPECT_EQ(auth.check(scrape("")), MetricsAccess::kUnauthenticated);
  EXPECT_EQ(api.token_reviews, 0);  // nothing to review
  EXPECT_EQ(auth.check(scrape("forged")), MetricsAccess::kUnauthenticated);
  EXPECT_EQ(api.access_reviews, 0);  // never authorised when not authenticated
  EXPECT_EQ(auth.check(scrape("nobody-token")), MetricsAccess::kForbidden);
  EXPECT_EQ(auth.refusal(scrape(""))->status, 401);
  EXPECT_EQ(auth.refusal(scrape("nobody-token"))->status, 403);
  EXPECT_EQ(auth.refusal(scrape("scraper-token")), std::nullopt);
}

TEST(MetricsAuth, AnswersAreCachedBrieflyByDigest) {
  FakeApi api;
  MetricsAuthorizer auth = api.make();
  auth.check(scrape("scraper-token"));
  auth.check(scrape("scraper-token"));
  EXPECT_EQ(api.token_reviews, 1);
  api.allowed.clear();  // the ClusterRoleBinding is removed
  api.now += kMetricsAllowTtl;
  EXPECT_EQ(auth.check(scrape("scraper-token")), MetricsAccess::kForbidden);
  EXPECT_EQ(api.token_reviews, 2);
  // A denial is remembered for less long.
  api.allowed.insert("system:serviceaccount:mon:prom");
  api.now += kMetricsDenyTtl;
  EXPECT_EQ(auth.check(scrape("scraper-token")), MetricsAccess::kAllowed);
}

TEST(MetricsAuth, AnUnreachableApiServerIs503AndNotRemembered) {
  FakeApi api;
  MetricsAuthorizer auth = api.make();
  api.down = true;
  EXPECT_EQ(auth.refusal(scrape("scraper-token"))->status, 503);
  api.down = false;
  EXPECT_EQ(auth.check(scrape("scraper-token")), MetricsAccess::kAllowed);
}

TEST(MetricsAuth, TheCacheIsBounded) {
  FakeApi api;
  MetricsAuthorizer auth = api.make();
  for (std::size_t i = 0; i < kMetricsAuthEntriesMax + 50; ++i) {
    auth.check(scrape("forged-" + std::to_string(i)));
  }
  EXPECT_EQ(auth.size(), kMetricsAuthEntriesMax);
}

// Wired into the routes: the gate answers before anything is rendered;
// without a gate (--metrics-auth=none) anyone is served (the control).
TEST(MetricsAuth, TheRouteAsksTheGateBeforeRendering) {
  FakeApi api;
  MetricsAuthorizer auth = api.make();
  int renders = 0;
  const Endpoints endpoints{"0.0.0.0:8080", "0.0.0.0:8081", ""};
  RouteHandlers handlers{[&] {
                           ++renders;
                           return std::string("heartbeat_agent_spend_cents 7\n");
                         },
                         [] { return true; }, nullptr,
                         [&](const http::ServerRequest& r) { return auth.refusal(r); }};
  EXPECT_EQ(route(endpoints, handlers, "0.0.0.0:8080", scrape("")).status, 401);
  EXPECT_EQ(route(endpoints, handlers, "0.0.0.0:8080", scrape("nobody-token")).status, 403);
  EXPECT_EQ(renders, 0);
  EXPECT_EQ(route(endpoints, handlers, "0.0.0.0:8080", scrape("scraper-token")).status, 200);
  EXPECT_EQ(renders, 1);
  handlers.metrics_gate = nullptr;
  EXPECT_EQ(route(endpoints, handlers, "0.0.0.0:8080", scrape("")).status, 200);
}

}  // namespace
}  // namespace hb::operator_
