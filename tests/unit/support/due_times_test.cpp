#include "tests/support/due_times.h"

#include <gtest/gtest.h>

namespace hb::testing {
namespace {

TEST(DueTimes, AKeyScheduledByEveryEventIsDueOnce) {
  DueTimes<int> due;
  due.schedule("pod-a", 200);
  due.schedule("pod-a", 300);  // a later step: the 200 one asks again
  due.schedule("pod-a", 250);
  EXPECT_EQ(due.size(), 1u);
  EXPECT_EQ(due.first_at(), 200);
  EXPECT_EQ(due.pop_first(), "pod-a");
  EXPECT_TRUE(due.empty());
}

TEST(DueTimes, AnEarlierScheduleReplacesTheLaterEntry) {
  DueTimes<int> due;
  due.schedule("pod-a", 500);
  due.schedule("pod-b", 300);
  due.schedule("pod-a", 100);  // an event: now
  EXPECT_EQ(due.size(), 2u);
  EXPECT_EQ(due.first_at(), 100);
  EXPECT_EQ(due.pop_first(), "pod-a");
  EXPECT_EQ(due.first_at(), 300);
  EXPECT_EQ(due.pop_first(), "pod-b");
  EXPECT_TRUE(due.empty());
}

TEST(DueTimes, APoppedKeyCanBeScheduledAgainForLater) {
  DueTimes<int> due;
  due.schedule("pod-a", 100);
  EXPECT_EQ(due.pop_first(), "pod-a");
  due.schedule("pod-a", 900);  // its next beat
  EXPECT_EQ(due.first_at(), 900);
}

}  // namespace
}  // namespace hb::testing
