// Wakeup coalescing in the leader's reconcile: queued callback runs fold
// into the oldest one; started, cancelled and non-callback runs never fold.
#include "controllers/agent/coalesce.h"

#include <gtest/gtest.h>

#include "controllers/model/names.h"
#include "tests/unit/controllers/fixtures.h"

namespace hb::controllers {
namespace {

using namespace testing;

Json callback(const std::string& name, const char* created, const std::string& reason) {
  Json r = run(name, "callback", std::nullopt, created);
  r["spec"]["triggerDetail"] = reason;
  return r;
}

TEST(Coalesce, LaterQueuedCallbacksFoldIntoTheOldestAndNeverStart) {
  const Json a = agent();
  const Json running = with_status(run("bot-s1", "scheduler", std::nullopt, "2024-05-01T12:00:00Z"),
                                   {{"phase", "Running"}, {"jobName", "bot-s1"}});
  const std::vector<Json> runs = {
      running,
      callback("bot-cb-3", "2024-05-01T12:05:03Z", "third"),
      callback("bot-cb-1", "2024-05-01T12:05:01Z", "first"),
      callback("bot-cb-2", "2024-05-01T12:05:02Z", "second"),
      run("bot-manual", "manual", std::nullopt, "2024-05-01T12:05:04Z"),
  };
  const AgentDecision d = decide(a, runs, at("2024-05-01T12:06:00Z"));
  ASSERT_EQ(d.coalesce.size(), 2u);
  EXPECT_EQ(d.coalesce[0].run, "bot-cb-2");
  EXPECT_EQ(d.coalesce[0].into, "bot-cb-1");
  EXPECT_EQ(d.coalesce[0].reason, "second");
  EXPECT_EQ(d.coalesce[1].run, "bot-cb-3");
  EXPECT_FALSE(d.start_run);  // the scheduler run is still running
  EXPECT_TRUE(d.queued_messages.count("bot-cb-1"));
  EXPECT_FALSE(d.queued_messages.count("bot-cb-2"));  // folded: no Queued message
  EXPECT_TRUE(d.queued_messages.count("bot-manual"));
  // Once the agent is free, the kept callback starts, never a folded one.
  const AgentDecision free = decide(a, {runs[1], runs[2], runs[3]}, at("2024-05-01T12:06:00Z"));
  ASSERT_TRUE(free.start_run);
  EXPECT_EQ(*free.start_run, "bot-cb-1");
}

// Seen in CI: two wakeups in the same second (creationTimestamp has whole
// seconds) kept the one whose name sorted first, not the first asked for.
// The wakeup endpoint's microsecond stamp orders them; a stamp far from
// creationTimestamp (hand-written) is not believed.
TEST(Coalesce, WakeupsInTheSameSecondKeepTheFirstAskedFor) {
  const Json a = agent();
  Json first = callback("bot-callback-zz", "2024-05-01T12:05:01Z", "first");
  first["metadata"]["annotations"][kAnnotationRequestedAt] = "2024-05-01T12:05:00.843000Z";
  Json second = callback("bot-callback-aa", "2024-05-01T12:05:01Z", "second");
  second["metadata"]["annotations"][kAnnotationRequestedAt] = "2024-05-01T12:05:00.853000Z";
  AgentDecision d = decide(a, {second, first}, at("2024-05-01T12:06:00Z"));
  ASSERT_EQ(d.coalesce.size(), 1u);
  EXPECT_EQ(d.coalesce[0].run, "bot-callback-aa");
  EXPECT_EQ(d.coalesce[0].into, "bot-callback-zz");
  // A stamp an hour early is ignored: the names decide the tie.
  second["metadata"]["annotations"][kAnnotationRequestedAt] = "2024-05-01T11:05:00.000000Z";
  first["metadata"]["annotations"].erase(kAnnotationRequestedAt);
  d = decide(a, {first, second}, at("2024-05-01T12:06:00Z"));
  ASSERT_EQ(d.coalesce.size(), 1u);
  EXPECT_EQ(d.coalesce[0].into, "bot-callback-aa");
}

TEST(Coalesce, StartedOrCancelledCallbacksDoNotFold) {
  Json started = with_status(callback("bot-cb-1", "2024-05-01T12:05:01Z", "first"),
                             {{"phase", "Running"}, {"jobName", "bot-cb-1"}});
  Json cancelled = callback("bot-cb-2", "2024-05-01T12:05:02Z", "second");
  cancelled["spec"]["cancel"] = true;
  const Json lone = callback("bot-cb-3", "2024-05-01T12:05:03Z", "third");
  const AgentDecision d = decide(agent(), {started, cancelled, lone}, at("2024-05-01T12:06:00Z"));
  EXPECT_TRUE(d.coalesce.empty());
}

TEST(Coalesce, TheRecordCountsEachRunOnceAndKeepsTheLatestTwenty) {
  Json status = {{"phase", "Queued"}};
  std::vector<Coalescing> first = {{"r1", "k", "one"}, {"r2", "k", "two"}};
  status["coalesced"] = coalesced_record(status, first);
  EXPECT_EQ(status["coalesced"]["count"], 2);
  // The same pass again (a crash before the folded runs were written).
  status["coalesced"] = coalesced_record(status, first);
  EXPECT_EQ(status["coalesced"]["count"], 2);
  std::vector<Coalescing> many;
  for (int i = 3; i < 40; ++i) many.push_back({"r" + std::to_string(i), "k", "n"});
  status["coalesced"] = coalesced_record(status, many);
  EXPECT_EQ(status["coalesced"]["count"], 39);
  EXPECT_EQ(status["coalesced"]["runs"].size(), kCoalescedRunsListedMax);
  EXPECT_EQ(status["coalesced"]["runs"].back()["run"], "r39");
}

TEST(Coalesce, AFoldedRunEndsCancelledWithNoCostAndCounted) {
  const Json s = coalesced_final_status(Json::object(), "bot-cb-1", at("2024-05-01T12:06:00Z"));
  EXPECT_EQ(s["phase"], "Cancelled");
  EXPECT_EQ(s["reason"], "Coalesced");
  EXPECT_EQ(s["costRecorded"], true);
  EXPECT_EQ(s["usage"]["costCents"], 0);
  EXPECT_NE(s["message"].get<std::string>().find("bot-cb-1"), std::string::npos);
}

}  // namespace
}  // namespace hb::controllers
