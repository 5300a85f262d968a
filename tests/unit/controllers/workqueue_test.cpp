// The work queue with a fake clock.
#include "controllers/runtime/workqueue.h"

#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <mutex>
#include <set>
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

// Read by the workers' threads while the test moves it.
struct SharedFakeClock {
  std::atomic<std::chrono::steady_clock::time_point> now{std::chrono::steady_clock::time_point{}};
  WorkQueue::Clock fn() {
    return [this] { return now.load(); };
  }
  void advance(std::chrono::milliseconds d) { now = now.load() + d; }
};

// Polls `done` until it holds or `timeout` (real time) passes.
bool wait_until(const std::function<bool()>& done, std::chrono::milliseconds timeout = 10s) {
  const auto until = std::chrono::steady_clock::now() + timeout;
  while (!done()) {
    if (std::chrono::steady_clock::now() >= until) return false;
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

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

TEST(WorkQueue, PerKeyExponentialBackoffFrom5msToAMinute) {
  FakeSteadyClock clock;
  WorkQueue q(clock.fn());
  EXPECT_EQ(q.backoff_for("a"), 5ms);
  q.add_rate_limited("a");
  EXPECT_EQ(q.backoff_for("a"), 10ms);
  q.add_rate_limited("a");
  EXPECT_EQ(q.backoff_for("a"), 20ms);
  EXPECT_EQ(q.backoff_for("b"), 5ms);  // per key
  for (int i = 0; i < 60; ++i) q.add_rate_limited("a");
  EXPECT_EQ(q.backoff_for("a"), std::chrono::milliseconds(60s));
  q.forget("a");
  EXPECT_EQ(q.backoff_for("a"), 5ms);
  EXPECT_GE(q.stats().retries, 62u);
}

// Blocked workers (one waits for a delayed key, the other for any key) see
// a delayed key when the clock reaches it, and wake on shutdown.
TEST(WorkQueue, ShutdownWakesBlockedWorkers) {
  SharedFakeClock clock;
  WorkQueue q(clock.fn());
  std::atomic<int> stopped{0};
  std::mutex m;
  std::vector<std::string> processed;
  std::vector<std::thread> workers;
  for (int i = 0; i < 2; ++i) {
    workers.emplace_back([&] {
      while (auto key = q.get()) {
        {
          std::lock_guard lock(m);
          processed.push_back(*key);
        }
        q.done(*key);
      }
      ++stopped;
    });
  }
  const auto count = [&] {
    std::lock_guard lock(m);
    return processed.size();
  };
  q.add("x");
  q.add_after("y", 5ms);
  ASSERT_TRUE(wait_until([&] { return count() == 1; }));
  EXPECT_EQ(q.stats().waiting, 1u) << "y is not due on the fake clock";
  clock.advance(5ms);
  ASSERT_TRUE(wait_until([&] { return count() == 2; }));
  EXPECT_EQ(processed, (std::vector<std::string>{"x", "y"}));
  q.add_after("z", 1h);  // a worker now waits for it
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
  // Drained: nothing queued or in a worker's hands (done() re-queues a key
  // added while it was processed, so this holds only once all is through).
  ASSERT_TRUE(wait_until([&] {
    const WorkQueueStats s = q.stats();
    return s.depth == 0 && s.processing == 0;
  }));
  q.shutdown();
  for (auto& t : workers) t.join();
  EXPECT_FALSE(overlap);
  EXPECT_GE(processed, 7) << "every key at least once";
  EXPECT_LE(processed, 2000);
}

}  // namespace
}  // namespace hb::controllers
