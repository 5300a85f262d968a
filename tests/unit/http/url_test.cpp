// The HTTP client's URL split and its rule for sending a request again.
#include "http/url.h"

#include <gtest/gtest.h>

namespace hb::http {
namespace {

TEST(HttpUrl, SplitsSchemeHostPortAndTarget) {
  auto url = parse_url("https://10.0.0.1:6443/api/v1/pods?watch=1");
  ASSERT_TRUE(url);
  EXPECT_TRUE(url->tls);
  EXPECT_EQ(url->host, "10.0.0.1");
  EXPECT_EQ(url->port, "6443");
  EXPECT_EQ(url->target, "/api/v1/pods?watch=1");
  EXPECT_EQ(url->origin, "https://10.0.0.1:6443");
  EXPECT_EQ(url->host_header, "10.0.0.1:6443");
}

TEST(HttpUrl, DefaultPortsAndAnEmptyPath) {
  auto plain = parse_url("http://model.local");
  ASSERT_TRUE(plain);
  EXPECT_FALSE(plain->tls);
  EXPECT_EQ(plain->port, "80");
  EXPECT_EQ(plain->target, "/");
  EXPECT_EQ(plain->host_header, "model.local");
  auto secure = parse_url("https://api.example.com?x=1");
  ASSERT_TRUE(secure);
  EXPECT_EQ(secure->port, "443");
  EXPECT_EQ(secure->target, "/?x=1");
  EXPECT_EQ(secure->origin, "https://api.example.com");
}

TEST(HttpUrl, AnIpv6LiteralLosesItsBracketsOnlyForTheHost) {
  auto url = parse_url("http://[::1]:8080/x");
  ASSERT_TRUE(url);
  EXPECT_EQ(url->host, "::1");
  EXPECT_EQ(url->port, "8080");
  EXPECT_EQ(url->host_header, "[::1]:8080");
  auto no_port = parse_url("https://[fd00::2]/");
  ASSERT_TRUE(no_port);
  EXPECT_EQ(no_port->host, "fd00::2");
  EXPECT_EQ(no_port->port, "443");
}

TEST(HttpUrl, RefusesWhatIsNotAnHttpUrl) {
  for (const char* bad :
       {"ftp://h/x", "h:80/x", "http://", "http://:80/x", "http://h:0/", "http://h:65536/",
        "http://h:8o/", "http://h:/", "http://[::1/x", "http://[::1]x/"}) {
    EXPECT_FALSE(parse_url(bad)) << bad;
  }
}

TEST(HttpUrl, OnlyIdempotentMethodsAreSentAgain) {
  for (const char* method : {"GET", "HEAD", "PUT", "DELETE", "OPTIONS"}) {
    EXPECT_TRUE(replayable_method(method)) << method;
  }
  for (const char* method : {"POST", "PATCH", "get", ""}) {
    EXPECT_FALSE(replayable_method(method)) << method;
  }
}

}  // namespace
}  // namespace hb::http
