// Every failure of kube::Client is a value: an Error of the right kind that
// names the request, never an exception (kube/errors.h). A scripted
// transport plays the API server, a proxy and a dead network.
#include <gtest/gtest.h>

#include <functional>

#include "kube/client.h"
#include "kube/resource.h"

namespace hb::kube {
namespace {

class ScriptedTransport : public http::Client {
 public:
  std::function<http::Response(const http::Request&)> answer;
  http::Response send(const http::Request& request) override { return answer(request); }
  http::Response stream(const http::Request& request, const http::ChunkHandler&) override {
    return answer(request);
  }
};

struct Fixture {
  std::shared_ptr<ScriptedTransport> transport = std::make_shared<ScriptedTransport>();
  Client client;
  Fixture() : client(cluster(), unlimited(), transport) {}
  static ClusterConfig cluster() {
    ClusterConfig c;
    c.server = "https://api.invalid";
    return c;
  }
  static ClientOptions unlimited() {
    ClientOptions o;
    o.qps = 0;
    return o;
  }
};

TEST(ClientResults, NoAnswerIsATransportErrorValue) {
  Fixture f;
  f.transport->answer = [](const http::Request& r) -> http::Response {
    throw http::TransportError(http::TransportError::Kind::kTimeout, r.url + ": timed out");
  };
  const Result<Json> got = f.client.get(resources::kConfigMaps, "team", "prompt");
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.error().kind, ErrorKind::kTransport);
  EXPECT_EQ(got.error().transport_kind, http::TransportError::Kind::kTimeout);
  EXPECT_TRUE(got.error().transient());
  EXPECT_NE(got.error().describe().find("get configmaps team/prompt"), std::string::npos)
      << got.error().describe();

  const Done watched =
      f.client.watch(resources::kConfigMaps, "team", {}, [](std::string_view) { return true; });
  ASSERT_FALSE(watched.ok());
  EXPECT_EQ(watched.error().kind, ErrorKind::kTransport);
}

TEST(ClientResults, AThrottledAnswerCarriesItsRetryAfter) {
  Fixture f;
  f.transport->answer = [](const http::Request&) {
    return http::Response{429, {{"retry-after", "3"}}, R"({"kind":"Status","code":429})"};
  };
  const Result<Json> got = f.client.create(resources::kConfigMaps, "team", Json::object());
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.error().kind, ErrorKind::kTooManyRequests);
  EXPECT_EQ(got.error().retry_after_seconds, 3);
  EXPECT_TRUE(got.error().transient());
}

TEST(ClientResults, ADefiniteNotFoundIsNotTransient) {
  Fixture f;
  f.transport->answer = [](const http::Request&) {
    return http::Response{
        404, {}, R"({"kind":"Status","code":404,"reason":"NotFound","message":"gone away"})"};
  };
  const Result<Json> got = f.client.get(resources::kConfigMaps, "team", "prompt");
  EXPECT_TRUE(got.is(ErrorKind::kNotFound));
  EXPECT_FALSE(got.error().transient());
  EXPECT_EQ(got.error().message, "gone away");
}

TEST(ClientResults, A2xxThatIsNotJsonIsMalformedNotAnException) {
  Fixture f;
  f.transport->answer = [](const http::Request&) {
    return http::Response{200, {}, "<html>proxy login</html>"};
  };
  const Result<Json> got = f.client.get(resources::kConfigMaps, "team", "prompt");
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.error().kind, ErrorKind::kMalformed);
  EXPECT_EQ(got.error().code, 200);

  f.transport->answer = [](const http::Request&) {  // a number no double holds
    return http::Response{200, {}, R"({"n": 1e999999})"};
  };
  EXPECT_TRUE(f.client.get(resources::kConfigMaps, "team", "x").is(ErrorKind::kMalformed));
}

TEST(ClientResults, OrThrowRaisesTheSameErrorForTestsAndTools) {
  Fixture f;
  f.transport->answer = [](const http::Request&) {
    return http::Response{409, {}, R"({"kind":"Status","code":409,"reason":"AlreadyExists"})"};
  };
  try {
    (void)f.client.create(resources::kConfigMaps, "team", Json::object()).or_throw();
    FAIL() << "or_throw returned";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kAlreadyExists);
    EXPECT_EQ(e.error().context, "create configmaps team");
  }
}

// A paged list hands out each page's items as the page arrives; a continue
// token that expires mid-way restarts the list once, and the caller is told
// before the first item comes again.
TEST(ClientResults, APagedListRestartsOnceWhenItsContinueTokenExpires) {
  Fixture f;
  int calls = 0;
  f.transport->answer = [&calls](const http::Request& r) {
    ++calls;
    const bool continued = r.url.find("continue=") != std::string::npos;
    if (calls == 2) return http::Response{410, {}, R"({"kind":"Status","code":410})"};
    if (!continued) {
      return http::Response{200, {}, R"({"metadata":{"resourceVersion":"7","continue":"t"},
                                         "items":[{"metadata":{"name":"a"}}]})"};
    }
    return http::Response{200, {}, R"({"metadata":{"resourceVersion":"9"},
                                       "items":[{"metadata":{"name":"b"}}]})"};
  };
  std::vector<std::string> seen;
  ListOptions options;
  options.limit = 1;
  const Result<std::string> version = f.client.list_each(
      resources::kConfigMaps, "team", options,
      [&](Json item) { seen.push_back(item["metadata"]["name"]); },
      [&] { seen.push_back("restart"); });
  ASSERT_TRUE(version.ok()) << version.error().describe();
  EXPECT_EQ(version.value(), "7");  // the first page's snapshot
  EXPECT_EQ(seen, (std::vector<std::string>{"a", "restart", "a", "b"}));

  // A second expiry in the same list is an error, not a loop.
  calls = 0;
  f.transport->answer = [](const http::Request& r) {
    if (r.url.find("continue=") != std::string::npos) {
      return http::Response{410, {}, R"({"kind":"Status","code":410})"};
    }
    return http::Response{200, {}, R"({"metadata":{"resourceVersion":"7","continue":"t"},
                                       "items":[]})"};
  };
  const Result<Json> all = f.client.list_all(resources::kConfigMaps, "team", options);
  ASSERT_FALSE(all.ok());
  EXPECT_EQ(all.error().kind, ErrorKind::kGone);
}

// One list of a single page answering `body`; the names handed on.
Result<std::string> list_one_page(const std::string& body, std::vector<std::string>& names) {
  Fixture f;
  f.transport->answer = [&body](const http::Request&) { return http::Response{200, {}, body}; };
  return f.client.list_each(
      resources::kConfigMaps, "team", {},
      [&](Json item) { names.push_back(item["metadata"].value("name", "")); }, [] {});
}

// A page's items are parsed one at a time as it arrives, escapes anywhere
// included. A body that is not one list page is Malformed (the items it
// handed on before that belong to a failed list, which the caller drops).
TEST(ClientResults, AListPageGivesItsItemsOneAtATime) {
  const std::vector<std::string> bodies = {
      // strings with braces, brackets and escapes inside items
      R"({"kind":"ConfigMapList","metadata":{"resourceVersion":"5"},"items":[
          {"metadata":{"name":"a"},"data":{"k":"}]{[\"\\"}},
          {"metadata":{"name":"b\u00e9"},"data":{"n":[1,2,{"x":null}]}}]})",
      // an escape in the list's resourceVersion
      R"({"metadata":{"resourceVersion":"\u0035"},"items":[{"metadata":{"name":"a"}},
          {"metadata":{"name":"b\u00e9"},"data":{"n":[1,2,{"x":null}]}}]})",
  };
  for (const std::string& body : bodies) {
    std::vector<std::string> names;
    const Result<std::string> version = list_one_page(body, names);
    ASSERT_TRUE(version.ok()) << body;
    EXPECT_EQ(version.value(), "5");
    EXPECT_EQ(names, (std::vector<std::string>{"a", "b\xc3\xa9"})) << body;
  }
  for (const std::string body :
       {R"({"metadata":{"resourceVersion":"5"},"items":[{"metadata":{"name":"a"}},{"metadata")",
        R"({"metadata":{"resourceVersion":"5"},"items":[{"metadata":{"name":"a"}}]} trailing)",
        "<html>502</html>"}) {
    std::vector<std::string> names;
    const Result<std::string> version = list_one_page(body, names);
    ASSERT_FALSE(version.ok()) << body;
    EXPECT_EQ(version.error().kind, ErrorKind::kMalformed) << body;
    EXPECT_NE(version.error().message.find("list page: "), std::string::npos) << body;
  }
  // items null or absent: an empty page.
  for (const std::string body : {R"({"metadata":{"resourceVersion":"5"},"items":null})",
                                 R"({"metadata":{"resourceVersion":"5"}})"}) {
    std::vector<std::string> names;
    const Result<std::string> version = list_one_page(body, names);
    ASSERT_TRUE(version.ok()) << body;
    EXPECT_EQ(version.value(), "5");
    EXPECT_TRUE(names.empty()) << body;
  }
}

}  // namespace
}  // namespace hb::kube
