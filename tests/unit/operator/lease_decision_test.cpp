// Leader election judged by observed time (client-go): skewed holder clocks
// neither depose a live leader nor keep a dead one.
#include "operator/lease_decision.h"

#include <gtest/gtest.h>

#include "operator/leader_election.h"

namespace hb::operator_ {
namespace {

using namespace std::chrono_literals;
using controllers::Json;

Json lease(const std::string& holder, const std::string& renew_time, int duration = 15) {
  return {{"spec",
           {{"holderIdentity", holder},
            {"leaseDurationSeconds", duration},
            {"renewTime", renew_time},
            {"acquireTime", "2026-01-01T00:00:00.000000Z"},
            {"leaseTransitions", 1}}}};
}

TEST(LeaseDecision, AHealthyLeaderWithAClockFortySecondsBehindIsNotDeposed) {
  // Its renewTime is always 40 s older than our clock would say: by wall
  // clocks it expired long ago; it keeps changing, so it holds.
  const MonoTime t0{};
  std::optional<ObservedLease> seen;
  for (int i = 0; i < 10; ++i) {
    const MonoTime now = t0 + std::chrono::seconds(2 * i);
    seen = observe_lease(seen, lease("a", "2026-01-01T00:00:" + std::to_string(10 + 2 * i) + "Z"),
                         now);
    EXPECT_TRUE(held_by_another(*seen, "b", now)) << i;
    EXPECT_EQ(seen->observed_at, now);
  }
}

TEST(LeaseDecision, AHolderThatStopsRenewingIsTakenOverAfterItsDurationOfObservation) {
  const MonoTime t0{};
  // Its renewTime is 40 s in our future: by wall clocks it would hold forever.
  const Json frozen = lease("a", "2999-01-01T00:00:00Z");
  std::optional<ObservedLease> seen = observe_lease(std::nullopt, frozen, t0);
  EXPECT_TRUE(held_by_another(*seen, "b", t0 + 14s));
  seen = observe_lease(seen, frozen, t0 + 14s);  // unchanged: the clock keeps running
  EXPECT_EQ(seen->observed_at, t0);
  EXPECT_FALSE(held_by_another(*seen, "b", t0 + 15s));
}

TEST(LeaseDecision, AClaimedDurationIsBelievedForAnHourAtMost) {
  const MonoTime t0{};
  // int64's maximum would overflow the clock; ten years would block forever.
  for (int64_t claimed : {int64_t{9223372036854775807}, int64_t{315360000}}) {
    const ObservedLease seen = observe_lease(std::nullopt, lease("a", "x", 0), t0);
    Json hostile = lease("a", "x");
    hostile["spec"]["leaseDurationSeconds"] = claimed;
    const ObservedLease o = observe_lease(seen, hostile, t0);
    EXPECT_TRUE(held_by_another(o, "b", t0 + kObservedLeaseDurationMax - 1s));
    EXPECT_FALSE(held_by_another(o, "b", t0 + kObservedLeaseDurationMax));
  }
  Json negative = lease("a", "x");
  negative["spec"]["leaseDurationSeconds"] = -5;
  EXPECT_FALSE(held_by_another(observe_lease(std::nullopt, negative, t0), "b", t0));
}

TEST(LeaseDecision, OursOrReleasedIsNotHeldByAnother) {
  const MonoTime t0{};
  EXPECT_FALSE(held_by_another(observe_lease(std::nullopt, lease("b", "x"), t0), "b", t0));
  EXPECT_FALSE(held_by_another(observe_lease(std::nullopt, lease("", "x", 1), t0), "b", t0));
}

TEST(LeaseDecision, TimingMustLetALeaderFenceBeforeATakeover) {
  EXPECT_TRUE(valid_lease_timing(15s, 10s, 2s));
  EXPECT_FALSE(valid_lease_timing(10s, 10s, 2s));  // no time between fence and takeover
  EXPECT_FALSE(valid_lease_timing(15s, 10s, 9s));  // a jittered retry could miss the deadline
}

TEST(LeaseUpdate, TakesOnlyWhatNoOneElseHolds) {
  LeaderElectionConfig c;
  c.identity = "b";
  c.lease_name = "op";
  c.lease_namespace = "ns";
  const controllers::TimePoint now{};
  EXPECT_FALSE(lease_update(lease("a", "x"), c, now, /*held_by_another=*/true));
  auto taken = lease_update(lease("a", "x"), c, now, false);
  ASSERT_TRUE(taken);
  EXPECT_EQ((*taken)["spec"]["holderIdentity"], "b");
  EXPECT_EQ((*taken)["spec"]["leaseTransitions"], 2);
  auto renewed = lease_update(lease("b", "x"), c, now, false);
  EXPECT_EQ((*renewed)["spec"]["leaseTransitions"], 1);
  EXPECT_TRUE(lease_update(std::nullopt, c, now, false));
}

}  // namespace
}  // namespace hb::operator_
