// A name from a tenant's spec reaches the API server only as one encoded
// path segment, and the HTTP layer sends no target or header that could end
// the request early. The attack: a ConfigMap name holding CR LF and a second
// request line, sent with the operator's token.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <mutex>
#include <random>

#include "http/http.h"
#include "http/url.h"
#include "kube/client.h"
#include "kube/resource.h"

namespace hb::kube {
namespace {

const std::string kSmuggling =
    "x HTTP/1.1\r\nHost: a\r\n\r\nDELETE /api/v1/namespaces/victim/configmaps/precious";

class RecordingTransport : public http::Client {
 public:
  std::vector<std::string> urls;
  http::Response send(const http::Request& request) override {
    urls.push_back(request.url);
    http::Response out;
    out.status = 200;
    out.body = "{}";
    return out;
  }
  http::Response stream(const http::Request& request, const http::ChunkHandler&) override {
    return send(request);
  }
};

Client recording_client(std::shared_ptr<RecordingTransport> transport) {
  ClusterConfig cluster;
  cluster.server = "https://api.invalid";
  ClientOptions options;
  options.qps = 0;
  return Client(cluster, options, std::move(transport));
}

TEST(RequestTarget, NamesAndNamespacesArePercentEncodedSegments) {
  EXPECT_EQ(resources::kConfigMaps.path("team-a", "app-memory"),
            "/api/v1/namespaces/team-a/configmaps/app-memory");
  EXPECT_EQ(resources::kConfigMaps.path("team-a", "a b:c"),
            "/api/v1/namespaces/team-a/configmaps/a%20b%3Ac");
  EXPECT_EQ(resources::kRoles.path("", ""), "/apis/rbac.authorization.k8s.io/v1/roles");
  EXPECT_EQ(url_encode("heartbeat.dev/agent=a,b!=c"), "heartbeat.dev%2Fagent%3Da%2Cb%21%3Dc");
}

TEST(RequestTarget, SegmentsThatCannotBeOneSegmentAreRefused) {
  for (const char* bad : {".", "..", "a/b", "a%2Fb", "a b", "x\r\n", "caf\xc3\xa9"}) {
    EXPECT_TRUE(path_segment_problem(bad).has_value()) << bad;
  }
  for (const char* good : {"", "app-memory", "a.b", "system:kube-scheduler", "..a"}) {
    EXPECT_FALSE(path_segment_problem(good).has_value()) << good;
  }
}

TEST(RequestTarget, TheClientNeverSendsASmugglingName) {
  auto transport = std::make_shared<RecordingTransport>();
  Client client = recording_client(transport);
  // Positive control: a real name goes out as it is.
  ASSERT_TRUE(client.get(resources::kConfigMaps, "team-a", "prompt").ok());
  ASSERT_EQ(transport->urls.size(), 1u);
  EXPECT_EQ(transport->urls[0], "https://api.invalid/api/v1/namespaces/team-a/configmaps/prompt");

  for (const std::string& name : {kSmuggling, std::string(".."), std::string("../../secrets/k")}) {
    Result<Json> got = client.get(resources::kConfigMaps, "team-a", name);
    ASSERT_FALSE(got.ok());
    EXPECT_EQ(got.error().kind, ErrorKind::kBadRequest);
    EXPECT_NE(got.error().message.find("not sent"), std::string::npos) << got.error().message;
    EXPECT_EQ(got.error().message.find_first_of("\r\n"), std::string::npos);
    EXPECT_EQ(got.error().context.find_first_of("\r\n"), std::string::npos);
  }
  EXPECT_FALSE(client.remove(resources::kJobs, "team-a/../victim", "j").ok());
  EXPECT_FALSE(client.list(resources::kJobs, "..", {}).ok());
  EXPECT_EQ(transport->urls.size(), 1u) << transport->urls.back();
}

TEST(RequestTarget, TheHttpLayerRefusesAnyUnsafeTargetOrHeader) {
  EXPECT_FALSE(http::url_problem("https://api:6443/api/v1/namespaces/a/pods?watch=1&x=%20"));
  for (const std::string& bad :
       {"https://api/api/v1/" + kSmuggling, std::string("https://api/a b"),
        std::string("https://api/a#frag"), std::string("https://api/\x7f"),
        std::string("https://api/caf\xc3\xa9"), std::string("https://api\r\nX: y/")}) {
    EXPECT_TRUE(http::url_problem(bad).has_value()) << bad;
  }
  EXPECT_FALSE(http::header_problem("Authorization", "Bearer a\tb"));
  EXPECT_TRUE(http::header_problem("X-Key", "a\r\nDELETE / HTTP/1.1"));
  EXPECT_TRUE(http::header_problem("X Key", "a"));
  EXPECT_TRUE(http::header_problem("", "a"));
}

// A loopback server counting the requests it parsed.
struct CountingServer {
  std::unique_ptr<http::Server> server;
  int port = 0;
  std::mutex mutex;
  std::vector<std::string> seen;  // "METHOD path"
  CountingServer() {
    std::mt19937 rng(std::random_device{}());
    for (int attempt = 0; attempt < 50 && !server; ++attempt) {
      port = 20000 + static_cast<int>(rng() % 40000);
      try {
        server = http::make_server("127.0.0.1:" + std::to_string(port),
                                   [this](const http::ServerRequest& r) {
                                     std::lock_guard lock(mutex);
                                     seen.push_back(r.method + " " + r.path);
                                     return http::ServerResponse{};
                                   });
      } catch (const http::TransportError&) {
      }
    }
  }
  std::size_t count() {
    std::lock_guard lock(mutex);
    return seen.size();
  }
};

// The bytes the unencoded name would have put on the wire, written by hand:
// the server reads two requests, the second one the attacker's.
std::size_t requests_seen_for_raw(CountingServer& srv, const std::string& raw) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(srv.port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  EXPECT_EQ(::send(fd, raw.data(), raw.size(), MSG_NOSIGNAL), static_cast<ssize_t>(raw.size()));
  for (int i = 0; i < 200 && srv.count() < 2; ++i) ::usleep(10'000);
  ::close(fd);
  return srv.count();
}

TEST(RequestTarget, ASmugglingTargetNeverReachesTheWire) {
  CountingServer srv;
  ASSERT_TRUE(srv.server);
  auto client = http::make_client({});
  http::Request smuggling{"GET",
                          "http://127.0.0.1:" + std::to_string(srv.port) +
                              "/api/v1/namespaces/team-a/configmaps/" + kSmuggling,
                          {},
                          "",
                          std::chrono::seconds(5),
                          nullptr};
  EXPECT_THROW(client->send(smuggling), http::TransportError);
  http::Request header{"GET",
                       "http://127.0.0.1:" + std::to_string(srv.port) + "/ok",
                       {{"X-Key", "a\r\n\r\nDELETE /victim HTTP/1.1"}},
                       "",
                       std::chrono::seconds(5),
                       nullptr};
  EXPECT_THROW(client->send(header), http::TransportError);
  EXPECT_EQ(srv.count(), 0u);
  // Positive control: the same bytes sent raw are two requests to the server.
  const std::string raw = "GET /api/v1/namespaces/team-a/configmaps/" + kSmuggling +
                          " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
  EXPECT_EQ(requests_seen_for_raw(srv, raw), 2u);
  std::lock_guard lock(srv.mutex);
  EXPECT_EQ(srv.seen.back(), "DELETE /api/v1/namespaces/victim/configmaps/precious");
}

}  // namespace
}  // namespace hb::kube
