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

}  // namespace
}  // namespace hb::operator_
