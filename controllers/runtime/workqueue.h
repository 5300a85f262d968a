// A rate-limited, delaying work queue (client-go's workqueue): a key is
// queued at most once (dedup), handed to one worker at a time (a key added
// while it is processed is queued again on done()), retried with per-key
// exponential backoff, and delayed adds keep the earlier time.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>

namespace hb::controllers {

using namespace std::chrono_literals;

inline constexpr std::chrono::milliseconds kWorkqueueBackoffMin = 5ms;
// client-go stops at 1000 s. Ours stops at a minute: the operator's promises
// are timed (a run's deadline, the next slot), and a pass that fails gives
// no requeue time of its own. After an outage of a few minutes in which
// every event's pass failed, an agent is looked at again within a minute
// of the recovery, not a quarter of an hour later.
inline constexpr std::chrono::milliseconds kWorkqueueBackoffMax = 60s;

struct WorkQueueStats {
  uint64_t adds = 0;
  uint64_t retries = 0;
  size_t depth = 0;    // ready and not being processed
  size_t waiting = 0;  // delayed
  size_t processing = 0;
};

class WorkQueue {
 public:
  using Clock = std::function<std::chrono::steady_clock::time_point()>;

  explicit WorkQueue(Clock clock = std::chrono::steady_clock::now,
                     std::chrono::milliseconds backoff_min = kWorkqueueBackoffMin,
                     std::chrono::milliseconds backoff_max = kWorkqueueBackoffMax);

  void add(const std::string& key);
  // Ready after `delay`; if the key already waits for an earlier time, or is
  // ready, nothing changes; a later wait is moved forward.
  void add_after(const std::string& key, std::chrono::milliseconds delay);
  // After a failure: backoff_min * 2^failures, at most backoff_max; or
  // `at_least` when that is longer (a server's Retry-After).
  void add_rate_limited(const std::string& key,
                        std::chrono::milliseconds at_least = std::chrono::milliseconds(0));
  std::chrono::milliseconds backoff_for(const std::string& key) const;
  // After a success: the key's failure count starts again.
  void forget(const std::string& key);

  // Blocks until a key is ready (or shutdown: nullopt).
  std::optional<std::string> get();
  // Non-blocking: a ready key, if any (also moves due delayed keys).
  std::optional<std::string> try_get();
  void done(const std::string& key);
  void shutdown();
  bool shutting_down() const;

  WorkQueueStats stats() const;
  // When the next delayed key becomes ready (for tests with a fake clock).
  std::optional<std::chrono::steady_clock::time_point> next_ready_at() const;

 private:
  using TimePoint = std::chrono::steady_clock::time_point;
  void add_locked(const std::string& key);
  void promote_due_locked(TimePoint now);
  std::optional<std::string> pop_locked();

  Clock clock_;
  std::chrono::milliseconds backoff_min_, backoff_max_;
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::string> queue_;
  std::set<std::string> dirty_;  // queued or to be re-queued after done()
  std::set<std::string> processing_;
  std::map<std::string, TimePoint> waiting_;  // key -> ready time
  // Views of waiting_'s keys (a map's keys stay put): at fleet size nearly
  // every agent waits for its next slot, and a second copy of each key was
  // about 70 bytes an agent.
  std::set<std::pair<TimePoint, std::string_view>> by_time_;
  std::map<std::string, int> failures_;
  uint64_t adds_ = 0, retries_ = 0;
  bool shutdown_ = false;
};

}  // namespace hb::controllers
