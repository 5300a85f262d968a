// Deleted Pods' last states, kept until their run's cost is recorded.
#include "controllers/run/pod_tombstones.h"

#include <gtest/gtest.h>

namespace hb::controllers {
namespace {

using Clock = PodTombstones::Clock;

Json finished_pod(const std::string& name) {
  return {
      {"metadata", {{"name", name}}},
      {"status",
       {{"containerStatuses",
         Json::array({{{"name", "runner"}, {"state", {{"terminated", {{"exitCode", 143}}}}}}})}}}};
}

TEST(PodTombstones, KeepsAFinishedPodUntilForgotten) {
  PodTombstones t;
  const auto now = Clock::now();
  t.remember("ns/r1", finished_pod("r1-a"), now);
  ASSERT_EQ(t.of("ns/r1", {}).size(), 1u);
  EXPECT_EQ(
      t.of("ns/r1", {})[0]["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"],
      143);
  EXPECT_TRUE(t.of("ns/r2", {}).empty());
  t.forget("ns/r1");
  EXPECT_TRUE(t.of("ns/r1", {}).empty());
  EXPECT_EQ(t.size(), 0u);
}

TEST(PodTombstones, APodThatNeverRanIsNotKept) {
  PodTombstones t;
  t.remember("ns/r1", {{"metadata", {{"name", "r1-a"}}}, {"status", {{"phase", "Pending"}}}},
             Clock::now());
  EXPECT_EQ(t.size(), 0u);
}

// The kubelet could not configure the runner (a missing Secret key): that is
// the run's outcome, and its Pod is deleted with the Job before it is read.
TEST(PodTombstones, APodWaitingOnAContainerConfigErrorIsKept) {
  PodTombstones t;
  Json pod = {
      {"metadata", {{"name", "r1-a"}}},
      {"status",
       {{"phase", "Pending"},
        {"containerStatuses",
         Json::array({{{"name", "runner"},
                       {"state", {{"waiting", {{"reason", "CreateContainerConfigError"}}}}}}})}}}};
  t.remember("ns/r1", pod, Clock::now());
  EXPECT_EQ(t.of("ns/r1", {}).size(), 1u);
}

TEST(PodTombstones, ALivePodOfTheSameNameWins) {
  PodTombstones t;
  t.remember("ns/r1", finished_pod("r1-a"), Clock::now());
  EXPECT_TRUE(t.of("ns/r1", {finished_pod("r1-a")}).empty());
}

TEST(PodTombstones, BoundedByAgeAndCount) {
  PodTombstones t;
  const auto start = Clock::now();
  t.remember("ns/old", finished_pod("old-a"), start);
  t.remember("ns/r", finished_pod("r-a"), start + kPodTombstoneTtl + std::chrono::seconds(1));
  EXPECT_TRUE(t.of("ns/old", {}).empty());  // expired
  for (std::size_t i = 0; i < kPodTombstonesMax + 10; ++i) {
    t.remember("ns/run" + std::to_string(i), finished_pod("p"), start + kPodTombstoneTtl);
  }
  EXPECT_EQ(t.size(), kPodTombstonesMax);
  EXPECT_TRUE(t.of("ns/run0", {}).empty());  // the oldest went first
  EXPECT_EQ(t.of("ns/run" + std::to_string(kPodTombstonesMax + 9), {}).size(), 1u);
}

}  // namespace
}  // namespace hb::controllers
