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
