#include "operator/wakeup_token.h"

#include <gtest/gtest.h>

#include <future>
#include <thread>

namespace hb::operator_ {
namespace {

using Clock = WakeupToken::Clock;

TEST(WakeupTokenFromSecret, DecodesAndDropsTrailingNewlines) {
  EXPECT_EQ(wakeup_token_from_secret({{"data", {{"token", "czNjcjN0Cg=="}}}}), "s3cr3t");
  EXPECT_EQ(wakeup_token_from_secret({{"data", {{"token", "Cg=="}}}}), std::nullopt);
  EXPECT_EQ(wakeup_token_from_secret({{"data", {{"other", "czNjcjN0"}}}}), std::nullopt);
  EXPECT_EQ(wakeup_token_from_secret(controllers::Json::object()), std::nullopt);
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
        throw std::runtime_error("connection refused");
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

}  // namespace
}  // namespace hb::operator_
