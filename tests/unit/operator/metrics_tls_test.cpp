// /metrics over TLS as the operator serves it (start_servers with
// metrics_tls): the token gate behind the handshake, plain HTTP refused on
// the metrics port while the health port stays plain, and the cert dir's
// pair loaded, refused by file, and reloaded.
#include "operator/metrics_tls.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "operator/self_signed_cert.h"
#include "operator/http_routes.h"
#include "operator/metrics_auth.h"
#include "tests/support/raw_client.h"
#include "tests/support/tls_client.h"

namespace hb::operator_ {
namespace {

using namespace std::chrono_literals;
using controllers::Json;
using test_support::RawClient;
using test_support::status_of;
using test_support::tls_request;
namespace fs = std::filesystem;

std::string get(const std::string& path, const std::string& token = "") {
  return "GET " + path + " HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n" +
         (token.empty() ? "" : "Authorization: Bearer " + token + "\r\n") + "\r\n";
}

// The reviews as kube-apiserver answers them: one token, allowed.
MetricsAuthorizer fake_reviews() {
  return MetricsAuthorizer(
      [](const Json& body) -> kube::Result<Json> {
        Json out = body;
        const bool known = body["spec"]["token"] == "scraper-token";
        out["status"] = known ? Json{{"authenticated", true}, {"user", {{"username", "prom"}}}}
                              : Json{{"authenticated", false}};
        return out;
      },
      [](const Json& body) -> kube::Result<Json> {
        Json out = body;
        out["status"] = {{"allowed", true}};
        return out;
      });
}

// A free loopback port, as scripts/free-port.py finds one (closed again at
// once: the listener binds it right after).
std::string free_loopback_address() {
  int port = 0;
  ::close(test_support::listen_on_loopback(1, port, "metrics_tls_test"));
  return "127.0.0.1:" + std::to_string(port);
}

// The operator's edge: metrics and health on two ports of their own.
struct Edge {
  Endpoints endpoints{free_loopback_address(), free_loopback_address(), ""};
  MetricsAuthorizer auth = fake_reviews();
  RouteHandlers handlers{[] { return std::string("heartbeat_up 1\n"); }, [] { return true; },
                         nullptr, [this](const http::ServerRequest& r) { return auth.refusal(r); }};
  std::vector<std::unique_ptr<http::Server>> servers;
  explicit Edge(std::shared_ptr<http::ServerTls> tls) {
    servers = start_servers(endpoints, handlers, std::move(tls));
  }
  int health_port() const { return servers.at(0)->port(); }
  int metrics_port() const { return servers.at(1)->port(); }
};

std::shared_ptr<http::ServerTls> self_signed() {
  Config config;
  return metrics_tls(config).or_throw();
}

TEST(MetricsTls, ATlsScraperNeedsAToken) {
  Edge edge(self_signed());
  const auto none = tls_request(edge.metrics_port(), get("/metrics"));  // curl -k
  ASSERT_TRUE(none.handshake_ok) << none.error;
  EXPECT_EQ(status_of(none.response), 401) << none.response;
  const auto scraper = tls_request(edge.metrics_port(), get("/metrics", "scraper-token"));
  EXPECT_EQ(status_of(scraper.response), 200) << scraper.response;
  EXPECT_NE(scraper.response.find("heartbeat_up 1"), std::string::npos);
  EXPECT_EQ(scraper.peer_cn, "localhost");  // the default --metrics-cert-hosts
}

// The control (no TLS: --metrics-secure=false) answers the same clear-text
// request, so the test would see clear-text serving; with TLS nothing comes
// back in clear, and the health port is plain either way.
TEST(MetricsTls, APlainRequestToTheMetricsPortGetsNoAnswerAndHealthStaysPlain) {
  Edge plain(nullptr);
  RawClient control(plain.metrics_port());
  control.send(get("/metrics", "scraper-token"));
  const std::string clear = control.read_all();
  EXPECT_EQ(status_of(clear), 200) << clear;

  Edge secure(self_signed());
  RawClient c(secure.metrics_port());
  c.send(get("/metrics", "scraper-token"));
  const std::string got = c.read_all();
  EXPECT_EQ(got.find("HTTP/"), std::string::npos) << got;
  EXPECT_EQ(got.find("heartbeat_up"), std::string::npos) << got;
  RawClient probe(secure.health_port());
  probe.send(get("/healthz"));
  EXPECT_EQ(status_of(probe.read_all()), 200);
}

class CertDir : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/hb-metrics-certs-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    config_.metrics_cert_dir = tmpl;
  }
  void TearDown() override { fs::remove_all(config_.metrics_cert_dir); }
  // Written aside and renamed in, as a Secret volume's update lands.
  void write(const char* file, const std::string& text) {
    const std::string path = config_.metrics_cert_dir + "/" + file;
    std::ofstream(path + ".new", std::ios::binary | std::ios::trunc) << text;
    fs::rename(path + ".new", path);
  }
  void write_pair(const std::string& cn) {
    const auto pem = self_signed_certificate({cn}, 1h).or_throw();
    write(kTlsCertFile, pem.cert_pem);
    write(kTlsKeyFile, pem.key_pem);
  }
  Config config_;
};

TEST_F(CertDir, AMissingOrGarbageKeyIsAStartErrorNamingTheFile) {
  write_pair("first");
  fs::remove(config_.metrics_cert_dir + "/tls.key");
  auto missing = metrics_tls(config_);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().describe().find(config_.metrics_cert_dir + "/tls.key: cannot read"),
            std::string::npos)
      << missing.error().describe();
  write(kTlsKeyFile, "garbage");
  auto garbage = metrics_tls(config_);
  ASSERT_FALSE(garbage.ok());
  EXPECT_NE(garbage.error().describe().find(config_.metrics_cert_dir + "/tls.key: not a PEM"),
            std::string::npos)
      << garbage.error().describe();
}

TEST_F(CertDir, AChangedPairIsServedAndABadOneKeepsTheOld) {
  write_pair("first");
  auto tls = metrics_tls(config_).or_throw();
  Edge edge(tls);
  EXPECT_EQ(tls_request(edge.metrics_port(), get("/metrics")).peer_cn, "first");
  CertDirReloader reloader(config_.metrics_cert_dir, tls, 1h);  // polled by hand below
  EXPECT_FALSE(reloader.poll());                                // nothing changed
  write(kTlsKeyFile, "garbage");
  EXPECT_FALSE(reloader.poll());
  EXPECT_EQ(tls_request(edge.metrics_port(), get("/metrics")).peer_cn, "first");
  write_pair("second");
  EXPECT_TRUE(reloader.poll());
  const auto reply = tls_request(edge.metrics_port(), get("/metrics"));
  EXPECT_EQ(reply.peer_cn, "second");
  EXPECT_EQ(status_of(reply.response), 401);
}

}  // namespace
}  // namespace hb::operator_
