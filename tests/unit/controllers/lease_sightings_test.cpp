// When the operator first saw each Lease version, on its steady clock.
#include "controllers/shell/lease_sightings.h"

#include <gtest/gtest.h>

#include "tests/unit/controllers/fixtures.h"

namespace hb::controllers {
namespace {

using namespace std::chrono_literals;

struct Clocks {
  std::chrono::steady_clock::time_point steady{};
  TimePoint wall = testing::at("2024-05-01T12:00:00Z");
  void advance(std::chrono::seconds d) {
    steady += d;
    wall += d;
  }
};

TEST(LeaseSightings, AVersionIsSeenOnceAndAgedByTheSteadyClock) {
  Clocks c;
  LeaseSightings sightings([&] { return c.steady; });
  const TimePoint first = c.wall;
  EXPECT_EQ(sightings.seen_at("ns/bot", "10", c.wall), first);
  c.advance(30s);
  EXPECT_EQ(sightings.seen_at("ns/bot", "10", c.wall), first);
  // The operator's wall clock jumps 90 s ahead: the sighting moves with it
  // (30 s ago on the new clock), so the jump neither stalls nor revives.
  c.wall += 90s;
  EXPECT_EQ(sightings.seen_at("ns/bot", "10", c.wall), c.wall - 30s);
  // A new version (a beat) is seen now.
  c.advance(5s);
  EXPECT_EQ(sightings.seen_at("ns/bot", "11", c.wall), c.wall);
  // Agents are apart; a forgotten one is seen anew.
  EXPECT_EQ(sightings.seen_at("ns/other", "11", c.wall), c.wall);
  c.advance(60s);
  sightings.forget("ns/bot");
  EXPECT_EQ(sightings.seen_at("ns/bot", "11", c.wall), c.wall);
  EXPECT_EQ(sightings.seen_at("ns/other", "11", c.wall), c.wall - 60s);
}

// The operator's wall clock jumping 80 s ahead just after it starts a run
// must not fail the run as Stalled before its first beat can be seen: a
// run's first sighting ages on the steady clock.
TEST(LeaseSightings, ARunIsSeenOnceAndForgottenWhenItIsNoLongerGoingOn) {
  Clocks c;
  LeaseSightings sightings([&] { return c.steady; });
  const TimePoint start = c.wall;
  EXPECT_EQ(sightings.runs_seen_at("ns/bot", {"r1"}, c.wall), std::vector<TimePoint>{start});
  c.advance(5s);
  c.wall += 80s;  // the jump
  EXPECT_EQ(sightings.runs_seen_at("ns/bot", {"r1"}, c.wall), std::vector<TimePoint>{c.wall - 5s});
  c.advance(10s);
  EXPECT_EQ(sightings.runs_seen_at("ns/bot", {"r1", "r2"}, c.wall),
            (std::vector<TimePoint>{c.wall - 15s, c.wall}));
  // r1 ended: forgotten; seen again it is new.
  EXPECT_EQ(sightings.runs_seen_at("ns/bot", {"r2"}, c.wall), std::vector<TimePoint>{c.wall});
  c.advance(1s);
  EXPECT_EQ(sightings.runs_seen_at("ns/bot", {"r1"}, c.wall), std::vector<TimePoint>{c.wall});
  sightings.forget("ns/bot");
  c.advance(1s);
  EXPECT_EQ(sightings.runs_seen_at("ns/bot", {"r1"}, c.wall), std::vector<TimePoint>{c.wall});
}

// An agent whose runs are all final keeps no Lease sighting (the reconciler
// drops it); its runs' sightings are apart and stay.
TEST(LeaseSightings, ALeaseSightingIsDroppedAloneAndSeenAnewAfter) {
  Clocks c;
  LeaseSightings sightings([&] { return c.steady; });
  const TimePoint start = c.wall;
  EXPECT_EQ(sightings.seen_at("ns/bot", "10", c.wall), start);
  EXPECT_EQ(sightings.runs_seen_at("ns/bot", {"r1"}, c.wall), std::vector<TimePoint>{start});
  c.advance(30s);
  sightings.forget_lease("ns/bot");
  sightings.forget_lease("ns/never-seen");  // nothing to drop: no effect
  EXPECT_EQ(sightings.seen_at("ns/bot", "10", c.wall), c.wall);
  EXPECT_EQ(sightings.runs_seen_at("ns/bot", {"r1"}, c.wall), std::vector<TimePoint>{start});
}

// An agent is held only while it has a Lease sighting or a run going on.
TEST(LeaseSightings, AnAgentWithNothingSeenHoldsNoEntry) {
  Clocks c;
  LeaseSightings sightings([&] { return c.steady; });
  EXPECT_TRUE(sightings.runs_seen_at("ns/bot", {}, c.wall).empty());
  EXPECT_EQ(sightings.agents(), 0u);
  (void)sightings.seen_at("ns/bot", "10", c.wall);
  (void)sightings.runs_seen_at("ns/bot", {"r1"}, c.wall);
  (void)sightings.runs_seen_at("ns/other", {"r2"}, c.wall);
  EXPECT_EQ(sightings.agents(), 2u);
  (void)sightings.runs_seen_at("ns/bot", {}, c.wall);  // its Lease is still held
  EXPECT_EQ(sightings.agents(), 2u);
  sightings.forget_lease("ns/bot");
  EXPECT_EQ(sightings.agents(), 1u);
  sightings.forget_lease("ns/other");  // its run is still going on
  EXPECT_EQ(sightings.agents(), 1u);
  (void)sightings.runs_seen_at("ns/other", {}, c.wall);
  EXPECT_EQ(sightings.agents(), 0u);
}

}  // namespace
}  // namespace hb::controllers
