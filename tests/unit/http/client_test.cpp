// The HTTP client (Boost.Beast) against servers of our own on loopback.
#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "http/http.h"
#include "tests/support/keep_alive_server.h"
#include "tests/support/raw_server.h"

namespace hb::http {
namespace {

struct LocalServer {
  std::unique_ptr<Server> server;
  int port = 0;
  std::string base() const { return "http://127.0.0.1:" + std::to_string(port); }
};

LocalServer start(Handler handler) {
  std::mt19937 rng(std::random_device{}());
  for (int attempt = 0; attempt < 50; ++attempt) {
    int port = 20000 + static_cast<int>(rng() % 40000);
    try {
      return {make_server("127.0.0.1:" + std::to_string(port), handler), port};
    } catch (const TransportError&) {
    }
  }
  throw std::runtime_error("no free port");
}

TEST(HttpClient, RoundTripWithHeadersAndBody) {
  auto srv = start([](const ServerRequest& r) {
    ServerResponse out;
    out.content_type = "application/json";
    out.body = R"({"method":")" + r.method + R"(","path":")" + r.path + R"(","query":")" + r.query +
               R"(","auth":")" +
               (r.headers.count("authorization") ? r.headers.at("authorization") : "") +
               R"(","body":)" + (r.body.empty() ? "null" : r.body) + "}";
    return out;
  });
  auto client = make_client({});
  Request req;
  req.method = "POST";
  req.url = srv.base() + "/apis/x?watch=1";
  req.headers = {{"Authorization", "Bearer t"}};
  req.body = R"({"a":1})";
  Response resp = client->send(req);
  EXPECT_EQ(resp.status, 200);
  EXPECT_EQ(resp.header("content-type"), "application/json");
  auto j = nlohmann::json::parse(resp.body);
  EXPECT_EQ(j["method"], "POST");
  EXPECT_EQ(j["path"], "/apis/x");
  EXPECT_EQ(j["query"], "watch=1");
  EXPECT_EQ(j["auth"], "Bearer t");
  EXPECT_EQ(j["body"]["a"], 1);
}

TEST(HttpClient, StreamHandsOverTheWholeBodyAndErrorsComeWhole) {
  std::string big(300 * 1024, 'z');
  auto srv = start([&](const ServerRequest& r) {
    ServerResponse out;
    if (r.path == "/missing") {
      out.status = 404;
      out.body = "nope";
    } else {
      out.body = big;
    }
    return out;
  });
  auto client = make_client({});
  std::string got;
  int chunks = 0;
  Response ok =
      client->stream({"GET", srv.base() + "/big", {}, "", std::chrono::seconds(5), nullptr},
                     [&](std::string_view chunk) {
                       got.append(chunk);
                       ++chunks;
                       return true;
                     });
  EXPECT_EQ(ok.status, 200);
  EXPECT_EQ(got, big);
  EXPECT_GE(chunks, 1);
  Response missing =
      client->stream({"GET", srv.base() + "/missing", {}, "", std::chrono::seconds(5), nullptr},
                     [&](std::string_view) { return true; });
  EXPECT_EQ(missing.status, 404);
  EXPECT_EQ(missing.body, "nope");
}

TEST(HttpClient, SendHandsOverAListPageSizedBodyByteForByte) {
  std::string big(5 * 1024 * 1024, '\0');
  std::mt19937 rng(7);
  for (char& c : big) c = static_cast<char>(rng() % 256);
  auto srv = start([&](const ServerRequest&) {
    ServerResponse out;
    out.body = big;
    return out;
  });
  auto client = make_client({});
  Response resp =
      client->send({"GET", srv.base() + "/big", {}, "", std::chrono::seconds(10), nullptr});
  EXPECT_EQ(resp.status, 200);
  EXPECT_EQ(resp.body.size(), big.size());
  EXPECT_TRUE(resp.body == big);
}

TEST(HttpClient, ABodyPastTheCallersBoundIsTooLarge) {
  const std::string body(256 * 1024, 'b');
  auto srv = start([&](const ServerRequest&) {
    ServerResponse out;
    out.body = body;
    return out;
  });
  auto client = make_client({});
  Request at_bound{"GET", srv.base() + "/exact", {}, "", std::chrono::seconds(5), nullptr};
  at_bound.body_bytes_max = body.size();
  EXPECT_EQ(client->send(at_bound).body.size(), body.size());
  Request below = at_bound;
  below.url = srv.base() + "/big";
  below.body_bytes_max = body.size() - 1;
  try {
    client->send(below);
    ADD_FAILURE() << "a body over its bound was read";
  } catch (const TransportError& e) {
    EXPECT_EQ(e.kind(), TransportError::Kind::kTooLarge) << e.what();
    EXPECT_NE(std::string(e.what()).find(below.url), std::string::npos) << e.what();
  }
}

// Chunked, so no length is announced: the bound is checked as it arrives.
TEST(HttpClient, AnUnannouncedBodyIsCutAtTheBound) {
  std::string raw = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n";
  for (int i = 0; i < 64; ++i) raw += "4000\r\n" + std::string(0x4000, 'c') + "\r\n";
  raw += "0\r\n\r\n";
  test_support::RawServer srv(raw);
  auto client = make_client({});
  Request request{"GET", srv.base() + "/stream", {}, "", std::chrono::seconds(5), nullptr};
  request.body_bytes_max = 100 * 1024;
  try {
    client->send(request);
    ADD_FAILURE() << "a body over its bound was read";
  } catch (const TransportError& e) {
    EXPECT_EQ(e.kind(), TransportError::Kind::kTooLarge) << e.what();
  }
}

TEST(HttpClient, SendJoinsAChunkedBody) {
  test_support::RawServer srv(
      "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n"
      "Connection: close\r\n\r\n5\r\n{\"a\":\r\n3\r\n[1,\r\n2\r\n2]\r\n1\r\n}\r\n0\r\n\r\n");
  auto client = make_client({});
  Response resp = client->send({"GET", srv.base() + "/", {}, "", std::chrono::seconds(5), nullptr});
  EXPECT_EQ(resp.status, 200);
  EXPECT_EQ(resp.body, R"({"a":[1,2]})");
}

// A hostile or broken server announces a body far larger than it sends: an
// error naming the URL, not an allocation of the announced size.
TEST(HttpClient, AnAnnouncedLengthThatNeverComesIsAnErrorNotAnAllocation) {
  test_support::RawServer srv(
      "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
      "Content-Length: 999999999999999\r\n\r\n{\"partial\":");
  auto client = make_client({});
  try {
    Response resp =
        client->send({"GET", srv.base() + "/page", {}, "", std::chrono::seconds(5), nullptr});
    ADD_FAILURE() << "a cut body was handed on as whole: " << resp.body.size() << " bytes";
  } catch (const TransportError& e) {
    EXPECT_NE(std::string(e.what()).find(srv.base() + "/page"), std::string::npos) << e.what();
  }
}

// Headers without end from a hostile server: an error naming the URL, not
// a buffer that grows with them.
TEST(HttpClient, AHeadPastItsBoundIsAnErrorNotAnAllocation) {
  test_support::RawServer srv("HTTP/1.1 200 OK\r\nX-Filler: " + std::string(256 * 1024, 'h') +
                              "\r\nContent-Length: 2\r\n\r\nok");
  auto client = make_client({});
  try {
    client->send({"GET", srv.base() + "/head", {}, "", std::chrono::seconds(5), nullptr});
    ADD_FAILURE() << "a 256 KiB header was taken";
  } catch (const TransportError& e) {
    EXPECT_NE(std::string(e.what()).find(srv.base() + "/head"), std::string::npos) << e.what();
  }
}

using Step = test_support::KeepAliveServer::Step;

TEST(HttpClient, AKeptAliveConnectionCarriesTheNextRequests) {
  test_support::KeepAliveServer srv({{Step::kAnswer, Step::kAnswer, Step::kAnswer}});
  auto client = make_client({});
  for (const char* method : {"GET", "POST", "PUT"}) {
    Response answer =
        client->send({method, srv.base() + "/x", {}, "{}", std::chrono::seconds(5), nullptr});
    EXPECT_EQ(answer.status, 200);
    EXPECT_EQ(answer.body, "ok");
  }
  EXPECT_EQ(srv.connections(), 1);
  EXPECT_EQ(srv.requests().size(), 3u);
}

// The server closes a kept-alive connection just as the next request goes
// out on it: a GET is sent again on a new connection; a POST is not (the
// server may have acted on it), and fails naming its URL.
TEST(HttpClient, AClosedKeptAliveConnectionResendsOnlyAnIdempotentRequest) {
  test_support::KeepAliveServer get_srv({{Step::kAnswer, Step::kDrop}, {Step::kAnswer}});
  auto client = make_client({});
  client->send({"GET", get_srv.base() + "/a", {}, "", std::chrono::seconds(5), nullptr});
  Response again =
      client->send({"GET", get_srv.base() + "/b", {}, "", std::chrono::seconds(5), nullptr});
  EXPECT_EQ(again.status, 200);
  EXPECT_EQ(get_srv.requests(), (std::vector<std::string>{"GET /a", "GET /b", "GET /b"}));
  EXPECT_EQ(get_srv.connections(), 2);

  test_support::KeepAliveServer post_srv({{Step::kAnswer, Step::kDrop}, {Step::kAnswer}});
  client->send({"GET", post_srv.base() + "/a", {}, "", std::chrono::seconds(5), nullptr});
  try {
    client->send({"POST", post_srv.base() + "/runs", {}, "{}", std::chrono::seconds(5), nullptr});
    ADD_FAILURE() << "a POST whose connection closed unanswered was reported answered";
  } catch (const TransportError& e) {
    EXPECT_EQ(e.kind(), TransportError::Kind::kConnect) << e.what();
    EXPECT_NE(std::string(e.what()).find(post_srv.base() + "/runs"), std::string::npos);
  }
  EXPECT_EQ(post_srv.requests(), (std::vector<std::string>{"GET /a", "POST /runs"}));
}

TEST(HttpClient, RefusedConnectionNamesTheUrl) {
  auto srv = start([](const ServerRequest&) { return ServerResponse{}; });
  std::string url = srv.base() + "/x";
  srv.server->stop();
  srv.server.reset();
  auto client = make_client({});
  try {
    client->send({"GET", url, {}, "", std::chrono::seconds(5), nullptr});
    FAIL() << "expected a TransportError";
  } catch (const TransportError& e) {
    EXPECT_NE(std::string(e.what()).find(url), std::string::npos) << e.what();
  }
}

// A server that stays silent: its handler waits until the gate opens (at
// the end of the test) instead of sleeping a fixed time. `reached` is ready
// once a request is in the handler.
struct Gate {
  std::promise<void> open_promise, reached_promise;
  std::shared_future<void> opened = open_promise.get_future().share();
  std::shared_future<void> reached = reached_promise.get_future().share();
  std::atomic<bool> any{false};
  static Handler silent(const std::shared_ptr<Gate>& gate) {
    return [gate](const ServerRequest&) {
      if (!gate->any.exchange(true)) gate->reached_promise.set_value();
      gate->opened.wait();
      return ServerResponse{};
    };
  }
};
// Declared after the server: opens the gate before the server stops (its
// stop waits for running handlers), also when a test fails early.
struct OpenOnExit {
  std::shared_ptr<Gate> gate;
  ~OpenOnExit() { gate->open_promise.set_value(); }
};

TEST(HttpClient, SilentServerTimesOut) {
  auto gate = std::make_shared<Gate>();
  auto srv = start(Gate::silent(gate));
  OpenOnExit open{gate};
  auto client = make_client({});
  auto started = std::chrono::steady_clock::now();
  try {
    client->send({"GET", srv.base() + "/slow", {}, "", std::chrono::milliseconds(300), nullptr});
    FAIL() << "expected a timeout";
  } catch (const TransportError& e) {
    EXPECT_EQ(e.kind(), TransportError::Kind::kTimeout) << e.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::milliseconds(1400));
}

TEST(HttpClient, CancelAbortsAWaitingRequest) {
  auto gate = std::make_shared<Gate>();
  auto srv = start(Gate::silent(gate));
  OpenOnExit open{gate};
  auto client = make_client({});
  auto cancel = std::make_shared<CancelSource>();
  // Cancelled while the request waits for its answer (or after 10 s).
  std::thread canceller([cancel, gate] {
    gate->reached.wait_for(std::chrono::seconds(10));
    cancel->cancel();
  });
  try {
    client->stream({"GET", srv.base() + "/slow", {}, "", std::chrono::seconds(10), cancel},
                   [](std::string_view) { return true; });
    ADD_FAILURE() << "expected cancellation";
  } catch (const TransportError& e) {
    EXPECT_EQ(e.kind(), TransportError::Kind::kCancelled) << e.what();
  }
  canceller.join();
}

TEST(HttpServer, HandlerExceptionBecomes500WithoutDetails) {
  auto srv = start(
      [](const ServerRequest&) -> ServerResponse { throw std::runtime_error("secret detail"); });
  auto client = make_client({});
  Response resp = client->send({"GET", srv.base() + "/", {}, "", std::chrono::seconds(5), nullptr});
  EXPECT_EQ(resp.status, 500);
  EXPECT_EQ(resp.body.find("secret"), std::string::npos);
}

}  // namespace
}  // namespace hb::http
