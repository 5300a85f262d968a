#include "operator/wakeup.h"

#include <gtest/gtest.h>

namespace hb::operator_ {
namespace {

TEST(Wakeup, IdempotencyKeysArePrintableAsciiUpTo128) {
  EXPECT_EQ(idempotency_key_problem("3f1c2a9e-delivery-1"), "");
  EXPECT_EQ(idempotency_key_problem(std::string(128, 'k')), "");
  EXPECT_NE(idempotency_key_problem(""), "");
  EXPECT_NE(idempotency_key_problem(std::string(129, 'k')), "");
  EXPECT_NE(idempotency_key_problem("a\r\nb"), "");
  EXPECT_NE(idempotency_key_problem("caf\xc3\xa9"), "");
  EXPECT_NE(idempotency_key_problem("").find("Idempotency-Key"), std::string::npos);
}

TEST(Wakeup, AKeyNamesOneRunPerAgent) {
  const std::string a = idempotent_run_name("bot", "uid-1", "delivery-1");
  EXPECT_EQ(a, idempotent_run_name("bot", "uid-1", "delivery-1"));
  EXPECT_NE(a, idempotent_run_name("bot", "uid-1", "delivery-2"));
  EXPECT_NE(a, idempotent_run_name("bot", "uid-2", "delivery-1"));  // a recreated agent
  EXPECT_EQ(a.rfind("bot-callback-", 0), 0u);
  EXPECT_LE(idempotent_run_name(std::string(300, 'b'), "u", "k").size(), 253u);
}

TEST(Wakeup, PathsNameOneAgent) {
  auto p = parse_wakeup_path("/api/v1/namespaces/team/agents/bot/wakeup");
  ASSERT_TRUE(p);
  EXPECT_EQ(p->ns, "team");
  EXPECT_EQ(p->name, "bot");
  EXPECT_FALSE(parse_wakeup_path("/api/v1/namespaces/team/agents/a/b/wakeup"));
  EXPECT_FALSE(parse_wakeup_path("/api/v1/namespaces//agents/bot/wakeup"));
}

TEST(Wakeup, ABodyCarriesAReasonAndBoundedMetadata) {
  auto parsed = parse_wakeup_body(R"({"reason":"ci failed","metadata":{"taskId":"T-42"}})");
  ASSERT_TRUE(std::holds_alternative<WakeupBody>(parsed));
  EXPECT_EQ(std::get<WakeupBody>(parsed).reason, "ci failed");
  EXPECT_EQ(std::get<WakeupBody>(parsed).metadata, nlohmann::json({{"taskId", "T-42"}}));
  EXPECT_TRUE(std::get<WakeupBody>(parse_wakeup_body("")).metadata.is_null());
  // A long reason is cut (free text); metadata past a bound is refused, never cut.
  const std::string long_reason = R"({"reason":")" + std::string(5000, 'r') + R"("})";
  EXPECT_EQ(std::get<WakeupBody>(parse_wakeup_body(long_reason)).reason.size(),
            kWakeupReasonBytesMax);
  const std::pair<const char*, const char*> refused[] = {
      {"[1]", "the body must be a JSON object"},
      {R"({"reason":7})", "reason must be a string"},
      {R"({"metadata":"T-42"})", "metadata must be an object of strings"},
      {R"({"metadata":{"taskId":42}})", "metadata.taskId must be a string"},
      {R"({"metadata":{"a b":"x"}})", "metadata key \"a b\""},
  };
  for (const auto& [body, message] : refused) {
    auto result = parse_wakeup_body(body);
    ASSERT_TRUE(std::holds_alternative<std::string>(result)) << body;
    EXPECT_NE(std::get<std::string>(result).find(message), std::string::npos)
        << body << ": " << std::get<std::string>(result);
  }
}

}  // namespace
}  // namespace hb::operator_
