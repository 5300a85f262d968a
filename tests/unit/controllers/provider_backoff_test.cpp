// Provider backoff: runs that fail on the model provider stretch an interval
// agent's gap to 2, 4, then 8 intervals; a run that reaches the model ends it.
#include "controllers/model/provider_backoff.h"

#include <gtest/gtest.h>

#include "tests/unit/controllers/fixtures.h"

namespace hb::controllers {
namespace {

using namespace testing;

TEST(ProviderBackoff, OnlyAProviderFailureAddsToTheStreak) {
  EXPECT_EQ(next_provider_error_streak(2, RunPhase::kFailed, kReasonProviderError), 3);
  EXPECT_EQ(next_provider_error_streak(2, RunPhase::kFailed, "InternalError"), 0);
  EXPECT_EQ(next_provider_error_streak(2, RunPhase::kSucceeded, ""), 0);
  EXPECT_EQ(next_provider_error_streak(2, RunPhase::kTimedOut, kReasonProviderError), 0);
  EXPECT_EQ(
      next_provider_error_streak(kProviderErrorStreakMax, RunPhase::kFailed, kReasonProviderError),
      kProviderErrorStreakMax);
}

TEST(ProviderBackoff, GapsDoubleUpToEightIntervals) {
  const std::vector<std::pair<int64_t, int64_t>> streak_to_intervals = {
      {0, 1}, {1, 2}, {2, 4}, {3, 8}, {4, 8}, {kProviderErrorStreakMax, 8}};
  for (auto [streak, intervals] : streak_to_intervals) {
    EXPECT_EQ(provider_backoff_intervals(streak), intervals) << "streak " << streak;
  }
}

std::string run_at(TimePoint slot) {
  return "bot-" + std::to_string(schedule::unix_seconds(slot));
}

// The slot's pass, then its run failing on the provider (or succeeding) a
// minute later, then the pass that counts it.
AgentDecision heartbeat(World& w, TimePoint slot, bool provider_down) {
  w.step(slot);
  w.finish(run_at(slot), slot + 1min, 0.1, std::nullopt, provider_down ? "Failed" : "Succeeded");
  if (provider_down) (*w.find(run_at(slot)))["status"]["reason"] = kReasonProviderError;
  return w.step(slot + 1min);
}

TEST(ProviderBackoffDecision, AnOutageStretchesTheGapAndTheFirstAnswerEndsIt) {
  World w{agent()};  // every 5m from 12:00
  AgentDecision d = heartbeat(w, at("2024-05-01T12:05:00Z"), true);
  EXPECT_EQ(d.status_json()["providerErrorStreak"], 1);
  EXPECT_EQ(d.status_json()["effectiveInterval"], "10m");
  EXPECT_EQ(d.status_json()["nextHeartbeatTime"], "2024-05-01T12:15:00Z");
  d = heartbeat(w, at("2024-05-01T12:15:00Z"), true);
  EXPECT_EQ(d.status_json()["nextHeartbeatTime"], "2024-05-01T12:35:00Z");
  d = heartbeat(w, at("2024-05-01T12:35:00Z"), true);
  EXPECT_EQ(d.status_json()["effectiveInterval"], "40m");
  EXPECT_EQ(d.status_json()["nextHeartbeatTime"], "2024-05-01T13:15:00Z");
  d = heartbeat(w, at("2024-05-01T13:15:00Z"), true);
  EXPECT_EQ(d.status_json()["effectiveInterval"], "40m") << "at most 8 intervals";
  d = heartbeat(w, at("2024-05-01T13:55:00Z"), false);
  EXPECT_FALSE(d.status_json().contains("providerErrorStreak"));
  EXPECT_FALSE(d.status_json().contains("effectiveInterval")) << "nothing to say";
  EXPECT_EQ(d.status_json()["nextHeartbeatTime"], "2024-05-01T14:00:00Z");
}

TEST(ProviderBackoffDecision, ACronScheduleKeepsItsRuleAndShowsTheStreak) {
  Json a = agent();
  a["spec"]["heartbeat"].erase("interval");
  a["spec"]["heartbeat"]["schedule"] = "*/5 * * * *";
  World w{a};
  AgentDecision d = heartbeat(w, at("2024-05-01T12:05:00Z"), true);
  EXPECT_EQ(d.status_json()["providerErrorStreak"], 1);
  EXPECT_FALSE(d.status_json().contains("effectiveInterval"));
  EXPECT_EQ(d.status_json()["nextHeartbeatTime"], "2024-05-01T12:10:00Z");
}

TEST(ProviderBackoffDecision, AHandEditedStreakIsDroppedOrClamped) {
  Json a = agent();
  a["status"] = {{"observedGeneration", 1}, {"providerErrorStreak", -3}};
  World w{a};
  AgentDecision d = w.step(at("2024-05-01T12:01:00Z"));
  EXPECT_TRUE(d.status_changed);
  EXPECT_FALSE(d.status_json().contains("providerErrorStreak"));
}

}  // namespace
}  // namespace hb::controllers
