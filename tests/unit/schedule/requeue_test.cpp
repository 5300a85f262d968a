#include "controllers/schedule/requeue.h"

#include <gtest/gtest.h>

#include "tests/unit/schedule/test_time.h"

namespace hb::schedule {
namespace {

using std::chrono::milliseconds;
using testing::utc;

TEST(Requeue, EarliestFutureCandidate) {
  const TimePoint now = utc("2024-03-01T10:00:00Z");
  const auto next_slot = utc("2024-03-01T10:05:00Z");
  const auto paused_until = utc("2024-03-01T10:02:00Z");
  EXPECT_EQ(requeue_at(now, {next_slot, paused_until}), paused_until);
  EXPECT_EQ(requeue_after(now, {next_slot, paused_until}), milliseconds{120'000});
}

TEST(Requeue, IgnoresPastNowAndMissingCandidates) {
  const TimePoint now = utc("2024-03-01T10:00:00Z");
  const auto next_slot = utc("2024-03-01T10:05:00Z");
  EXPECT_EQ(requeue_at(now, {utc("2024-03-01T09:00:00Z"), now, std::nullopt, next_slot}),
            next_slot);
  EXPECT_EQ(requeue_at(now, {std::nullopt, utc("2024-03-01T09:00:00Z")}), std::nullopt);
  EXPECT_EQ(requeue_after(now, {}), std::nullopt);
}

TEST(Requeue, RoundsUpSoTheSlotIsDueOnWakeup) {
  const TimePoint now = utc("2024-03-01T10:00:00Z") + std::chrono::microseconds{1};
  EXPECT_EQ(requeue_after(now, {utc("2024-03-01T10:00:01Z")}), milliseconds{1000});
}

}  // namespace
}  // namespace hb::schedule
