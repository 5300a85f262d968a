// The HTTP server with TLS (make_server with a ServerTls) against real TLS
// clients and hostile plain ones: what it serves, what it refuses, and that
// the handshake has a deadline and counts against the connection caps.
#include <gtest/gtest.h>
#include <openssl/ssl.h>

#include <chrono>
#include <thread>
#include <vector>

#include "http/http.h"
#include "operator/self_signed_cert.h"
#include "operator/tls_server_context.h"
#include "tests/support/raw_client.h"
#include "tests/support/tls_client.h"

namespace hb::http {
namespace {

using namespace hb::operator_;

using namespace std::chrono_literals;
using test_support::RawClient;
using test_support::status_of;
using test_support::tls_request;
using Clock = std::chrono::steady_clock;

const char* kGet = "GET /metrics HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n";

struct Cert {
  CertificatePem pem = self_signed_certificate({"localhost", "127.0.0.1"}, 1h).or_throw();
  std::shared_ptr<ServerTls> tls() const {
    return std::make_shared<ServerTls>(
        server_context_from_pem(pem.cert_pem, pem.key_pem, "crt", "key").or_throw());
  }
};

ServerLimits quick_limits() {
  ServerLimits l;
  l.head_timeout = 1s;
  l.handshake_timeout = 1s;
  l.connections_max = 64;
  l.connections_per_source_max = 64;
  return l;
}

std::unique_ptr<Server> metrics_like(const ServerLimits& limits, std::shared_ptr<ServerTls> tls) {
  return make_server(
      "127.0.0.1:0",
      [](const ServerRequest& r) {
        ServerResponse out;
        out.body = "heartbeat_up 1 " + r.path;
        return out;
      },
      limits, std::move(tls));
}

TEST(HttpServerTls, AVerifyingTlsClientIsServedWithTls12OrLater) {
  const Cert cert;
  auto server = metrics_like(quick_limits(), cert.tls());
  const auto reply = tls_request(server->port(), kGet, {cert.pem.cert_pem, "localhost"});
  ASSERT_TRUE(reply.handshake_ok) << reply.error;
  EXPECT_TRUE(reply.version == "TLSv1.3" || reply.version == "TLSv1.2") << reply.version;
  EXPECT_EQ(status_of(reply.response), 200) << reply.response;
  EXPECT_NE(reply.response.find("heartbeat_up 1 /metrics"), std::string::npos);
  // A client that offers nothing newer than TLS 1.1 is refused.
  const auto old = tls_request(server->port(), kGet, {"", "", TLS1_1_VERSION});
  EXPECT_FALSE(old.handshake_ok);
  EXPECT_EQ(old.response, "");
}

// The control: the same request in clear text to a plain server is answered,
// so the test would see clear-text serving.
TEST(HttpServerTls, APlainRequestGetsNoHttpResponseWhereAPlainServerAnswers) {
  const Cert cert;
  auto plain = metrics_like(quick_limits(), nullptr);
  RawClient control(plain->port());
  control.send(kGet);
  const std::string answered = control.read_all();
  EXPECT_EQ(status_of(answered), 200) << answered;
  EXPECT_NE(answered.find("heartbeat_up"), std::string::npos);

  auto tls = metrics_like(quick_limits(), cert.tls());
  RawClient c(tls->port());
  c.send(kGet);
  const std::string got = c.read_all();
  EXPECT_EQ(got.find("HTTP/"), std::string::npos) << got;
  EXPECT_EQ(got.find("heartbeat_up"), std::string::npos) << got;
}

TEST(HttpServerTls, ASilentClientIsDroppedAtTheHandshakeDeadlineAndOthersAreServed) {
  const Cert cert;
  auto server = metrics_like(quick_limits(), cert.tls());
  auto health = metrics_like(quick_limits(), nullptr);
  const auto start = Clock::now();
  RawClient silent(server->port());  // connects, never says hello
  ASSERT_TRUE(silent.connected());
  RawClient probe(health->port());
  probe.send("GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(status_of(probe.read_all()), 200);
  EXPECT_TRUE(tls_request(server->port(), kGet).handshake_ok);
  EXPECT_EQ(silent.read_all(), "");  // closed, unanswered
  const auto waited = Clock::now() - start;
  EXPECT_GE(waited, 900ms);
  EXPECT_LT(waited, 5s);  // the deadline is 1 s; the client's own timeout is 20 s
}

// Silent handshakes count against the per-source cap: with eviction off the
// cap's worth of them makes a TLS client's request a 503; with eviction on
// the oldest silent one is closed for it, at once.
TEST(HttpServerTls, SilentHandshakesCountAgainstThePerSourceCap) {
  const Cert cert;
  for (const bool evict : {false, true}) {
    ServerLimits limits = quick_limits();
    limits.connections_per_source_max = 4;
    limits.handshake_timeout = 30s;
    limits.evict_idle_when_full = evict;
    auto server = metrics_like(limits, cert.tls());
    std::vector<std::unique_ptr<RawClient>> silent;
    for (int i = 0; i < 4; ++i) silent.push_back(std::make_unique<RawClient>(server->port()));
    std::this_thread::sleep_for(200ms);  // the accept loop takes them in
    const auto start = Clock::now();
    const auto reply = tls_request(server->port(), kGet);
    ASSERT_TRUE(reply.handshake_ok) << reply.error;
    if (!evict) {
      EXPECT_EQ(status_of(reply.response), 503) << reply.response;
      continue;
    }
    EXPECT_EQ(status_of(reply.response), 200) << reply.response;
    EXPECT_EQ(silent.front()->read_all(), "");
    EXPECT_LT(Clock::now() - start, 5s);  // evicted, not timed out (30 s)
  }
}

TEST(HttpServerTls, ANewCertificateServesNewConnections) {
  const Cert first, second;
  auto tls = first.tls();
  auto server = metrics_like(quick_limits(), tls);
  EXPECT_TRUE(tls_request(server->port(), kGet, {first.pem.cert_pem, "localhost"}).handshake_ok);
  tls->replace(second.tls()->current());
  EXPECT_FALSE(tls_request(server->port(), kGet, {first.pem.cert_pem, "localhost"}).handshake_ok);
  const auto reply = tls_request(server->port(), kGet, {second.pem.cert_pem, "localhost"});
  ASSERT_TRUE(reply.handshake_ok) << reply.error;
  EXPECT_EQ(status_of(reply.response), 200);
}

}  // namespace
}  // namespace hb::http
