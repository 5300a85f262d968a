#include "operator/wakeup_token.h"

#include <gtest/gtest.h>

#include <future>
#include <map>
#include <thread>

namespace hb::operator_ {
namespace {

using Clock = WakeupToken::Clock;

TEST(WakeupTokenFromSecret, DecodesAndDropsTrailingNewlines) {
  EXPECT_EQ(wakeup_token_from_secret({{"data", {{"token", "czNjcjN0Cg=="}}}}).value(), "s3cr3t");
  EXPECT_EQ(wakeup_token_from_secret({{"data", {{"token", "Cg=="}}}}).value(), std::nullopt);
  EXPECT_EQ(wakeup_token_from_secret({{"data", {{"other", "czNjcjN0"}}}}).value(), std::nullopt);
  EXPECT_EQ(wakeup_token_from_secret(controllers::Json::object()).value(), std::nullopt);
}

// A Secret edited by hand with its token not base64: an Error saying where,
// never the token's characters; the reader answers no token.
TEST(WakeupTokenFromSecret, ATokenThatIsNotBase64IsAnError) {
  const controllers::Json secret{{"data", {{"token", "czNj*cjN0"}}}};
  const auto token = wakeup_token_from_secret(secret);
  ASSERT_FALSE(token.ok());
  EXPECT_EQ(token.error().kind, kube::ErrorKind::kMalformed);
  EXPECT_EQ(token.error().describe(), "not base64: unexpected character at offset 4");
  auto read = wakeup_token_reader(
      [&](const std::string&, const std::string&) -> kube::Result<controllers::Json> {
        return secret;
      },
      "ops", "wakeup-token");
  EXPECT_EQ(read(), std::nullopt);
}

TEST(WakeupToken, IsReadOnceAMinute) {
  Clock::time_point now{};
  int reads = 0;
  WakeupToken token([&] { return std::optional<std::string>("t" + std::to_string(++reads)); },
                    [&] { return now; });
  EXPECT_EQ(token.get(), "t1");
  now += std::chrono::seconds(59);
  EXPECT_EQ(token.get(), "t1");
  now += std::chrono::seconds(1);
  EXPECT_EQ(token.get(), "t2");
  EXPECT_EQ(reads, 2);
}

TEST(WakeupToken, AFailedReadMeansNoTokenAndIsNotRetriedAtOnce) {
  Clock::time_point now{};
  int reads = 0;
  WakeupToken token(
      [&]() -> std::optional<std::string> {
        ++reads;
        return std::nullopt;  // connection refused, logged by the reader
      },
      [&] { return now; });
  EXPECT_EQ(token.get(), std::nullopt);
  EXPECT_EQ(token.get(), std::nullopt);  // a flood of requests is not a flood of GETs
  EXPECT_EQ(reads, 1);
}

// A read hanging on a slow API server holds no lock: every other request is
// answered at once with the token read before (it would hang here otherwise).
TEST(WakeupToken, AHangingReadDoesNotBlockOtherCallers) {
  Clock::time_point now{};
  std::promise<void> entered, release;
  std::shared_future<void> released = release.get_future().share();
  int reads = 0;
  WakeupToken token(
      [&]() -> std::optional<std::string> {
        if (++reads == 2) {
          entered.set_value();
          released.wait();
        }
        return "t" + std::to_string(reads);
      },
      [&] { return now; });
  EXPECT_EQ(token.get(), "t1");
  now += kWakeupTokenRereadInterval;
  std::thread reader([&] { EXPECT_EQ(token.get(), "t2"); });
  entered.get_future().wait();
  EXPECT_EQ(token.get(), "t1");
  EXPECT_EQ(token.get(), "t1");
  release.set_value();
  reader.join();
  EXPECT_EQ(token.get(), "t2");
  EXPECT_EQ(reads, 2);
}

TEST(WakeupTokenReader, ReadsTheNamedSecretInTheGivenNamespace) {
  std::string asked;
  auto read = wakeup_token_reader(
      [&](const std::string& ns, const std::string& name) {
        asked = ns + "/" + name;
        return controllers::Json{{"data", {{"token", "czNjcjN0Cg=="}}}};
      },
      "ops", "wakeup-token");
  EXPECT_EQ(read(), "s3cr3t");
  EXPECT_EQ(asked, "ops/wakeup-token");
}

TEST(WakeupTokenReader, NoSecretNamedMeansNoTokenAndNoRead) {
  int reads = 0;
  auto read = wakeup_token_reader(
      [&](const std::string&, const std::string&) {
        ++reads;
        return controllers::Json::object();
      },
      "ops", "");
  EXPECT_EQ(read(), std::nullopt);
  EXPECT_EQ(reads, 0);
}

TEST(WakeupTokenReader, AnUnreadableSecretMeansNoToken) {
  auto read = wakeup_token_reader(
      [](const std::string&, const std::string&) -> kube::Result<controllers::Json> {
        kube::Error forbidden;
        forbidden.kind = kube::ErrorKind::kForbidden;
        forbidden.code = 403;
        forbidden.message = "secrets \"wakeup-token\" is forbidden";
        return forbidden;
      },
      "ops", "wakeup-token");
  EXPECT_EQ(read(), std::nullopt);
  auto empty = wakeup_token_reader(
      [](const std::string&, const std::string&) -> kube::Result<controllers::Json> {
        return controllers::Json::object();
      },
      "ops", "wakeup-token");
  EXPECT_EQ(empty(), std::nullopt);
}

// The cache over the reader, as the manager wires it: one GET a minute by
// the injected clock, whatever the number of requests.
TEST(WakeupTokenReader, CachedTheSecretIsReadOnceAnInterval) {
  Clock::time_point now{};
  int reads = 0;
  WakeupToken token(wakeup_token_reader(
                        [&](const std::string&, const std::string&) {
                          ++reads;
                          return controllers::Json{{"data", {{"token", "czNjcjN0"}}}};
                        },
                        "ops", "wakeup-token"),
                    [&] { return now; });
  for (int i = 0; i < 100; ++i) EXPECT_EQ(token.get(), "s3cr3t");
  EXPECT_EQ(reads, 1);
  now += kWakeupTokenRereadInterval - std::chrono::seconds(1);
  EXPECT_EQ(token.get(), "s3cr3t");
  EXPECT_EQ(reads, 1);
  now += std::chrono::seconds(1);
  EXPECT_EQ(token.get(), "s3cr3t");
  EXPECT_EQ(reads, 2);
}

// --- per namespace ---

TEST(NamespaceTokens, EachNamespaceIsReadOncePerTtlAndMissingOnesAreRemembered) {
  Clock::time_point now{};
  std::map<std::string, int> reads;
  NamespaceTokens tokens(
      [&](const std::string& ns) -> std::optional<std::string> {
        ++reads[ns];
        if (ns == "none") return std::nullopt;
        return ns + "-token-0123456789";
      },
      [&] { return now; });
  EXPECT_EQ(tokens.get("a"), token_digest("a-token-0123456789"));
  EXPECT_EQ(tokens.get("b"), token_digest("b-token-0123456789"));
  EXPECT_EQ(tokens.get("none"), std::nullopt);
  now += kNamespaceTokenTtl - std::chrono::seconds(1);
  tokens.get("a");
  tokens.get("none");
  EXPECT_EQ(reads["a"], 1);
  EXPECT_EQ(reads["none"], 1);
  now += std::chrono::seconds(1);
  tokens.get("a");
  EXPECT_EQ(reads["a"], 2);
}

TEST(NamespaceTokens, KeepDigestsOnlyAndBoundedNamespaces) {
  NamespaceTokens tokens([](const std::string& ns) { return std::optional<std::string>(ns); });
  for (std::size_t i = 0; i < kNamespaceTokensEntriesMax + 100; ++i) {
    tokens.get("ns-" + std::to_string(i));
  }
  EXPECT_EQ(tokens.size(), kNamespaceTokensEntriesMax);
  static_assert(sizeof(TokenDigest) == 32);  // whatever size the Secret's token is
}

TEST(NamespaceTokens, ASlowReadDoesNotHoldOtherNamespacesOrTheStaleAnswer) {
  Clock::time_point now{};
  std::promise<void> entered, release;
  std::shared_future<void> released = release.get_future().share();
  bool block = false;
  NamespaceTokens tokens(
      [&](const std::string& ns) -> std::optional<std::string> {
        if (ns == "slow" && block) {
          entered.set_value();
          released.wait();
        }
        return ns + "-token-0123456789";
      },
      [&] { return now; });
  tokens.get("slow");
  now += kNamespaceTokenTtl;
  block = true;
  auto reader = std::async(std::launch::async, [&] { return tokens.get("slow"); });
  entered.get_future().wait();
  // While the re-read hangs: the same namespace answers with the digest
  // read before, another namespace is read at once.
  EXPECT_EQ(tokens.get("slow"), token_digest("slow-token-0123456789"));
  EXPECT_EQ(tokens.get("fast"), token_digest("fast-token-0123456789"));
  release.set_value();
  EXPECT_EQ(reader.get(), token_digest("slow-token-0123456789"));
}

TEST(NamespaceTokenReader, ReadsTheWellKnownSecretOnlyWhereAllowed) {
  std::vector<std::string> asked;
  auto read = namespace_token_reader(
      [&](const std::string& ns, const std::string& name) -> kube::Result<controllers::Json> {
        asked.push_back(ns + "/" + name);
        if (ns == "missing") {
          kube::Error e;
          e.kind = kube::ErrorKind::kNotFound;
          return e;
        }
        if (ns == "short") return controllers::Json{{"data", {{"token", "c2hvcnQ="}}}};
        // "a-long-enough-token" in base64
        return controllers::Json{{"data", {{"token", "YS1sb25nLWVub3VnaC10b2tlbg=="}}}};
      },
      "heartbeat-system", [](const std::string& ns) { return ns != "not-watched"; });
  EXPECT_EQ(read("team-a"), "a-long-enough-token");
  EXPECT_EQ(read("missing"), std::nullopt);
  EXPECT_EQ(read("short"), std::nullopt);  // under kWakeupTokenBytesMin: refused
  EXPECT_EQ(read("not-watched"), std::nullopt);
  // Never managed, whatever `allowed` says: never read.
  EXPECT_EQ(read("kube-system"), std::nullopt);
  EXPECT_EQ(read("kube-node-lease"), std::nullopt);
  EXPECT_EQ(read("heartbeat-system"), std::nullopt);
  EXPECT_EQ(asked, (std::vector<std::string>{"team-a/heartbeat-wakeup", "missing/heartbeat-wakeup",
                                             "short/heartbeat-wakeup"}));
}

TEST(TokenDigests, CompareEqualOnlyForTheSameToken) {
  EXPECT_TRUE(digest_equal(token_digest("abc"), token_digest("abc")));
  EXPECT_FALSE(digest_equal(token_digest("abc"), token_digest("abd")));
  EXPECT_FALSE(digest_equal(token_digest(""), token_digest("abc")));
}

}  // namespace
}  // namespace hb::operator_
