// The operator's HTTP server against hostile clients: raw sockets on
// loopback that send slowly, too much, or too often. Timeouts are shortened
// through ServerLimits so the tests wait seconds, not the defaults.
#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "http/http.h"
#include "http/server_util.h"
#include "tests/support/raw_client.h"

namespace hb::http {
namespace {

using test_support::RawClient;
using test_support::status_of;

using namespace std::chrono_literals;

ServerLimits quick_limits() {
  ServerLimits l;
  l.head_timeout = 1s;
  l.body_timeout = 1s;
  l.idle_timeout = 2s;
  l.body_bytes_max = 1024;
  l.connections_max = 64;
  l.connections_per_source_max = 64;  // every test client is 127.0.0.1
  return l;
}

std::unique_ptr<Server> echo_server(const ServerLimits& limits = quick_limits()) {
  return make_server(
      "127.0.0.1:0",
      [](const ServerRequest& r) {
        ServerResponse out;
        out.body = r.method + " " + r.path + " " + r.query + " " + r.body;
        out.headers.push_back({"X-Seen", r.headers.count("x-test") ? r.headers.at("x-test") : ""});
        return out;
      },
      limits);
}

std::string get(int port, const std::string& path) {
  RawClient c(port);
  c.send("GET " + path + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  return c.read_all();
}

TEST(HttpServerUtil, SplitsAndDecodesTargets) {
  EXPECT_EQ(split_target("/a%20b?x=1%20").path, "/a b");
  EXPECT_EQ(split_target("/a%20b?x=1%20").query, "x=1%20");
  EXPECT_EQ(split_target("/bad%2").path, "/bad%2");
  EXPECT_EQ(split_target("/bad%zz").path, "/bad%zz");
  EXPECT_TRUE(unsafe_header_value("a\r\nSet-Cookie: x"));
  EXPECT_FALSE(unsafe_header_value("120"));
}

TEST(HttpServerUtil, RefusalsAreLoggedOncePerIntervalWithACount) {
  RefusalLog log;
  const RefusalLog::Clock::time_point t0{};
  EXPECT_EQ(log.should_log(408, t0), 1);
  EXPECT_EQ(log.should_log(408, t0 + 1s), std::nullopt);
  EXPECT_EQ(log.should_log(408, t0 + 2s), std::nullopt);
  EXPECT_EQ(log.should_log(413, t0 + 2s), 1);  // per status
  EXPECT_EQ(log.should_log(408, t0 + kRefusalLogInterval), 3);
}

TEST(HttpServer, AnswersAndKeepsAlive) {
  auto server = echo_server();
  RawClient c(server->port());
  c.send("POST /p%20q?z=1 HTTP/1.1\r\nHost: x\r\nX-Test: yes\r\nContent-Length: 3\r\n\r\nabc");
  const std::string first = c.read_response();
  EXPECT_EQ(status_of(first), 200) << first;
  EXPECT_NE(first.find("POST /p q z=1 abc"), std::string::npos) << first;
  EXPECT_NE(first.find("X-Seen: yes"), std::string::npos) << first;
  c.send("GET /again HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_NE(c.read_response().find("GET /again"), std::string::npos);
}

TEST(HttpServer, ASlowHeadGets408AndOthersAreServedMeanwhile) {
  auto server = echo_server();
  RawClient slow(server->port());
  slow.send("GET / HTTP/1.1\r\nHost: x\r\n");  // never ends its head
  EXPECT_EQ(status_of(get(server->port(), "/meanwhile")), 200);
  EXPECT_EQ(status_of(slow.read_all()), 408);
}

TEST(HttpServer, AMissingBodyGets408AndDoesNotFreezeTheServer) {
  auto server = echo_server();
  std::vector<std::unique_ptr<RawClient>> holders;
  for (int i = 0; i < 40; ++i) {  // the attack: a head promising a body never sent
    holders.push_back(std::make_unique<RawClient>(server->port()));
    holders.back()->send("POST /w HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n");
  }
  EXPECT_EQ(status_of(get(server->port(), "/healthz")), 200);
  EXPECT_EQ(status_of(holders.front()->read_all()), 408);
}

TEST(HttpServer, ADeclaredLargeBodyIsRefusedBeforeItIsRead) {
  std::atomic<int> calls{0};
  auto server = make_server(
      "127.0.0.1:0",
      [&](const ServerRequest&) {
        ++calls;
        return ServerResponse{};
      },
      quick_limits());
  RawClient c(server->port());
  c.send("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1073741824\r\n\r\n");
  EXPECT_EQ(status_of(c.read_all()), 413);
  EXPECT_EQ(calls, 0);
}

TEST(HttpServer, AChunkedBodyOverTheCapIsRefusedWhileReading) {
  auto server = echo_server();
  RawClient c(server->port());
  c.send("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n");
  const std::string chunk(800, 'a');
  c.send("320\r\n" + chunk + "\r\n");
  c.send("320\r\n" + chunk + "\r\n");
  EXPECT_EQ(status_of(c.read_all()), 413);
}

TEST(HttpServer, AHugeHeadGets431) {
  auto server = echo_server();
  RawClient c(server->port());
  c.send("GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(16 * 1024, 'b') + "\r\n\r\n");
  EXPECT_EQ(status_of(c.read_all()), 431);
}

// With eviction off (the control for the tests below): the cap refuses.
TEST(HttpServer, ConnectionsOverTheCapGet503WithRetryAfter) {
  ServerLimits limits = quick_limits();
  limits.connections_max = 4;
  limits.evict_idle_when_full = false;
  limits.head_timeout = 5s;
  auto server = echo_server(limits);
  std::vector<std::unique_ptr<RawClient>> held;
  for (int i = 0; i < 4; ++i) {
    held.push_back(std::make_unique<RawClient>(server->port()));
    held.back()->send("G");  // the head started, never finished
  }
  // The 4 are counted once accepted: a fifth gets 503 (retry: the accept
  // loop may still be taking the four in).
  std::string refused;
  for (int attempt = 0; attempt < 50 && status_of(refused) != 503; ++attempt) {
    refused = get(server->port(), "/");
    if (status_of(refused) != 503) std::this_thread::sleep_for(20ms);
  }
  EXPECT_EQ(status_of(refused), 503) << refused;
  EXPECT_NE(refused.find("Retry-After: 1"), std::string::npos);
  held.clear();  // their slots free up
  std::string ok;
  for (int attempt = 0; attempt < 50 && status_of(ok) != 200; ++attempt) {
    ok = get(server->port(), "/");
    if (status_of(ok) != 200) std::this_thread::sleep_for(20ms);
  }
  EXPECT_EQ(status_of(ok), 200);
}

// A client connection from a given loopback source address (127.0.0.x).
int connect_from(const char* source, int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in from{};
  from.sin_family = AF_INET;
  ::inet_pton(AF_INET, source, &from.sin_addr);
  sockaddr_in to = test_support::loopback(port);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&from), sizeof from) != 0 ||
      ::connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to) != 0) {
    ::close(fd);
    return -1;
  }
  timeval tv{10, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  return fd;
}

std::string get_from(const char* source, int port, const std::string& path) {
  const int fd = connect_from(source, port);
  if (fd < 0) return "";
  const std::string request = "GET " + path + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
  (void)!::send(fd, request.data(), request.size(), MSG_NOSIGNAL);
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = ::recv(fd, buf, sizeof buf, 0)) > 0) out.append(buf, static_cast<size_t>(n));
  ::close(fd);
  return out;
}

// The attack on the liveness probe: the cap's worth of idle
// connections (256, the default) and the probe still gets 200. The control
// (eviction off) shows the same flood makes it 503.
TEST(HttpServer, AProbeGetsInPastTheCapsWorthOfIdleConnections) {
  for (const bool evict : {true, false}) {
    ServerLimits limits = quick_limits();
    limits.connections_max = ServerLimits{}.connections_max;
    limits.connections_per_source_max = limits.connections_max;  // one source may fill it
    limits.head_timeout = 30s;
    limits.evict_idle_when_full = evict;
    auto server = echo_server(limits);
    std::vector<std::unique_ptr<RawClient>> idle;
    for (std::size_t i = 0; i < limits.connections_max; ++i) {
      idle.push_back(std::make_unique<RawClient>(server->port()));
      ASSERT_TRUE(idle.back()->connected());
    }
    // The accept loop may still be taking them in: wait until a refusal
    // (control) or a few probes (eviction) have been seen.
    std::string probe;
    for (int attempt = 0; attempt < 20; ++attempt) {
      std::this_thread::sleep_for(50ms);
      probe = get(server->port(), "/healthz");
      if (!evict && status_of(probe) == 503) break;
    }
    if (evict) {
      EXPECT_EQ(status_of(probe), 200) << probe;
    } else {
      EXPECT_EQ(status_of(probe), 503) << probe;
    }
  }
}

// One source at its cap only loses its own idle connections; another
// source's connection stays and is served.
TEST(HttpServer, PerSourceCapsCloseTheSourcesOwnIdleConnections) {
  ServerLimits limits = quick_limits();
  limits.connections_per_source_max = 4;
  limits.head_timeout = 30s;
  auto server = echo_server(limits);
  const int other = connect_from("127.0.0.2", server->port());
  ASSERT_GE(other, 0) << "no 127.0.0.2 on loopback";
  std::vector<std::unique_ptr<RawClient>> flood;
  for (int i = 0; i < 40; ++i) flood.push_back(std::make_unique<RawClient>(server->port()));
  std::this_thread::sleep_for(200ms);
  // The flood's first connections were closed without an answer.
  EXPECT_EQ(flood.front()->read_all(), "");
  // The other source's connection is still open and answers.
  const std::string request = "GET /mine HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
  (void)!::send(other, request.data(), request.size(), MSG_NOSIGNAL);
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = ::recv(other, buf, sizeof buf, 0)) > 0) out.append(buf, static_cast<size_t>(n));
  ::close(other);
  EXPECT_EQ(status_of(out), 200) << out;
  EXPECT_NE(out.find("GET /mine"), std::string::npos);
  // And the flooding source itself still gets a new request in.
  EXPECT_EQ(status_of(get(server->port(), "/again")), 200);
}

TEST(HttpServer, HandlersSeeThePeersAddress) {
  auto server = make_server(
      "127.0.0.1:0",
      [](const ServerRequest& r) {
        ServerResponse out;
        out.body = "from " + r.remote_address;
        return out;
      },
      quick_limits());
  EXPECT_NE(get_from("127.0.0.3", server->port(), "/").find("from 127.0.0.3"), std::string::npos);
}

TEST(HttpServerUtil, AdmissionEvictsTheBiggestHoldersOldestIdle) {
  using T = std::chrono::steady_clock::time_point;
  const T t0{};
  const std::vector<OpenConnection> open = {
      {"node", true, t0},      // the probe's source, oldest idle
      {"pod", true, t0 + 1s},  // the flood's oldest idle
      {"pod", true, t0 + 2s},
      {"pod", false, t0},  // busy: never evicted
  };
  EXPECT_TRUE(admit_connection(open, "new", 10, 10, true).admit);
  EXPECT_FALSE(admit_connection(open, "new", 10, 10, true).evict);
  const Admission full = admit_connection(open, "new", 4, 10, true);
  EXPECT_TRUE(full.admit);
  EXPECT_EQ(full.evict, 1u);  // pod holds 3: its oldest idle goes, not the node's
  const Admission own = admit_connection(open, "node", 10, 1, true);
  EXPECT_EQ(own.evict, 0u);  // at its own cap: its own connection goes
  EXPECT_FALSE(admit_connection(open, "new", 4, 10, false).admit);
  const std::vector<OpenConnection> busy = {{"pod", false, t0}};
  EXPECT_FALSE(admit_connection(busy, "new", 1, 10, true).admit);
}

TEST(HttpServer, ASlowHandlerDoesNotBlockOtherConnections) {
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  auto server = make_server(
      "127.0.0.1:0",
      [&](const ServerRequest& r) {
        if (r.path == "/slow") released.wait();
        return ServerResponse{};
      },
      quick_limits());
  RawClient slow(server->port());
  slow.send("GET /slow HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(status_of(get(server->port(), "/fast")), 200);
  release.set_value();
  EXPECT_EQ(status_of(slow.read_all()), 200);
}

TEST(HttpServer, AHeaderValueThatWouldSplitTheResponseIsDropped) {
  auto server = make_server(
      "127.0.0.1:0",
      [](const ServerRequest&) {
        ServerResponse out;
        out.headers.push_back({"X-Evil", "a\r\nSet-Cookie: stolen=1"});
        return out;
      },
      quick_limits());
  const std::string response = get(server->port(), "/");
  EXPECT_EQ(status_of(response), 200);
  EXPECT_EQ(response.find("Set-Cookie"), std::string::npos);
}

TEST(HttpServer, AnUnusableAddressIsAClearError) {
  EXPECT_THROW(make_server("nonsense", [](const ServerRequest&) { return ServerResponse{}; }),
               TransportError);
  auto taken = echo_server();
  EXPECT_THROW(make_server("127.0.0.1:" + std::to_string(taken->port()),
                           [](const ServerRequest&) { return ServerResponse{}; }),
               TransportError);
}

}  // namespace
}  // namespace hb::http
