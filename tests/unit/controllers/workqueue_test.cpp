// The work queue with a fake clock.
#include "controllers/runtime/workqueue.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

namespace hb::controllers {
namespace {

struct FakeSteadyClock {
  std::chrono::steady_clock::time_point now{};
  WorkQueue::Clock fn() {
    return [this] { return now; };
  }
};

TEST(WorkQueue, DeduplicatesQueuedKeys) {
  FakeSteadyClock clock;
  WorkQueue q(clock.fn());
  q.add("a");
  q.add("a");
  q.add("b");
  EXPECT_EQ(q.stats().depth, 2u);
  EXPECT_EQ(q.try_get(), "a");
  EXPECT_EQ(q.try_get(), "b");
  EXPECT_EQ(q.try_get(), std::nullopt);
}

TEST(WorkQueue, OneWorkerPerKeyAndRequeueAfterDone) {
  FakeSteadyClock clock;
  WorkQueue q(clock.fn());
  q.add("a");
  ASSERT_EQ(q.try_get(), "a");
  q.add("a");  // while processing: not handed out twice
  EXPECT_EQ(q.try_get(), std::nullopt);
  q.add("a");  // still only once
  q.done("a");
  EXPECT_EQ(q.try_get(), "a");
  q.done("a");
  EXPECT_EQ(q.try_get(), std::nullopt);
}

TEST(WorkQueue, DelayedAddsTheEarlierTimeWins) {
  FakeSteadyClock clock;
  WorkQueue q(clock.fn());
  q.add_after("a", 10s);
  q.add_after("a", 3s);   // earlier: moves forward
  q.add_after("a", 20s);  // later: ignored
  EXPECT_EQ(*q.next_ready_at(), clock.now + 3s);
  clock.now += 2s;
  EXPECT_EQ(q.try_get(), std::nullopt);
  clock.now += 1s;
  EXPECT_EQ(q.try_get(), "a");
  q.done("a");
  EXPECT_EQ(q.next_ready_at(), std::nullopt);
}

TEST(WorkQueue, AddNowBeatsAWait) {
  FakeSteadyClock clock;
  WorkQueue q(clock.fn());
  q.add_after("a", 10s);
  q.add("a");
  EXPECT_EQ(q.try_get(), "a");
  q.done("a");
  clock.now += 11s;
  EXPECT_EQ(q.try_get(), std::nullopt);  // the wait was consumed
}

TEST(WorkQueue, PriorityKeysAreHandedOutBeforeOrdinaryKeysAndRetries) {
  FakeSteadyClock clock;
  WorkQueue q(clock.fn());
  q.add("event-1");
  q.add_rate_limited("retry");  // ready after 5 ms, in the ordinary lane
  q.add_after("slot", 1s, WorkQueue::Lane::kPriority);
  q.add("event-2");
  clock.now += 1s;
  EXPECT_EQ(q.stats().depth, 2u);  // the delayed two are promoted by the next get
  EXPECT_EQ(q.stats().waiting, 2u);
  EXPECT_EQ(q.try_get(), "slot");
  EXPECT_EQ(q.try_get(), "event-1");
  EXPECT_EQ(q.try_get(), "event-2");
  EXPECT_EQ(q.try_get(), "retry");
  EXPECT_EQ(q.try_get(), std::nullopt);
  EXPECT_EQ(q.stats().depth, 0u);
}

TEST(WorkQueue, AQueuedKeyAddedWithPriorityMovesAheadAndIsHandedOutOnce) {
  FakeSteadyClock clock;
  WorkQueue q(clock.fn());
  q.add("a");
  q.add("b");
  q.add_after("b", 0ms, WorkQueue::Lane::kPriority);  // ahead of a; its ordinary entry goes stale
  EXPECT_EQ(q.stats().depth, 2u);
  EXPECT_EQ(q.try_get(), "b");
  EXPECT_EQ(q.try_get(), "a");
  EXPECT_EQ(q.try_get(), std::nullopt);  // the stale entry of b is skipped
  q.done("a");
  q.done("b");
  EXPECT_EQ(q.try_get(), std::nullopt);
}

TEST(WorkQueue, APriorityKeyDueWhileProcessingIsRequeuedInThePriorityLane) {
  FakeSteadyClock clock;
  WorkQueue q(clock.fn());
  q.add("a");
  ASSERT_EQ(q.try_get(), "a");
  q.add("a");                                        // an event while a is processed
  q.add_after("a", 2s, WorkQueue::Lane::kPriority);  // its slot, due before done()
  q.add("b");
  clock.now += 2s;
  EXPECT_EQ(q.try_get(), "b");  // a is still being processed
  q.add("c");
  q.done("a");
  EXPECT_EQ(q.try_get(), "a");  // priority: before c
  EXPECT_EQ(q.try_get(), "c");
  EXPECT_EQ(q.try_get(), std::nullopt);
}

TEST(WorkQueue, ARetryAtTheTimeOfAPriorityWaitKeepsThePriorityLane) {
  FakeSteadyClock clock;
  WorkQueue q(clock.fn(), 1s, 1000s);
  q.add_after("a", 1s, WorkQueue::Lane::kPriority);
  q.add_rate_limited("a");  // also 1 s: the priority lane is kept
  q.add("b");
  clock.now += 1s;
  EXPECT_EQ(q.try_get(), "a");
  EXPECT_EQ(q.try_get(), "b");
}

TEST(WorkQueue, DelayedAddsTakeTheOrdinaryLaneUnlessAsked) {
  FakeSteadyClock clock;
  WorkQueue q(clock.fn());
  q.add("a");
  q.add_after("b", 1s);
  clock.now += 1s;
  EXPECT_EQ(q.try_get(), "a");
  EXPECT_EQ(q.try_get(), "b");
}

TEST(WorkQueue, PerKeyExponentialBackoffFrom5msTo1000s) {
  FakeSteadyClock clock;
  WorkQueue q(clock.fn());
  EXPECT_EQ(q.backoff_for("a"), 5ms);
  q.add_rate_limited("a");
  EXPECT_EQ(q.backoff_for("a"), 10ms);
  q.add_rate_limited("a");
  EXPECT_EQ(q.backoff_for("a"), 20ms);
  EXPECT_EQ(q.backoff_for("b"), 5ms);  // per key
  for (int i = 0; i < 60; ++i) q.add_rate_limited("a");
  EXPECT_EQ(q.backoff_for("a"), std::chrono::milliseconds(1000s));
  q.forget("a");
  EXPECT_EQ(q.backoff_for("a"), 5ms);
  EXPECT_GE(q.stats().retries, 62u);
}

TEST(WorkQueue, ShutdownWakesBlockedWorkers) {
  WorkQueue q;
  std::atomic<int> stopped{0};
  std::vector<std::thread> workers;
  for (int i = 0; i < 2; ++i) {
    workers.emplace_back([&] {
      while (auto key = q.get()) q.done(*key);
      ++stopped;
    });
  }
  q.add("x");
  q.add_after("y", 5ms);
  std::this_thread::sleep_for(50ms);
  q.shutdown();
  for (auto& t : workers) t.join();
  EXPECT_EQ(stopped, 2);
  q.add("z");  // ignored after shutdown
  EXPECT_EQ(q.stats().depth, 0u);
}

TEST(WorkQueue, ConcurrentWorkersNeverShareAKey) {
  WorkQueue q;
  std::mutex m;
  std::set<std::string> active;
  std::atomic<bool> overlap{false};
  std::atomic<int> processed{0};
  std::vector<std::thread> workers;
  for (int i = 0; i < 4; ++i) {
    workers.emplace_back([&] {
      while (auto key = q.get()) {
        {
          std::lock_guard lock(m);
          if (!active.insert(*key).second) overlap = true;
        }
        std::this_thread::sleep_for(100us);
        {
          std::lock_guard lock(m);
          active.erase(*key);
        }
        ++processed;
        q.done(*key);
      }
    });
  }
  for (int i = 0; i < 2000; ++i) q.add("k" + std::to_string(i % 7));
  std::this_thread::sleep_for(200ms);
  q.shutdown();
  for (auto& t : workers) t.join();
  EXPECT_FALSE(overlap);
  EXPECT_GT(processed, 0);
}

}  // namespace
}  // namespace hb::controllers
