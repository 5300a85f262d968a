// A rate-limited, delaying work queue (client-go's workqueue): a key is
// queued at most once (dedup), handed to one worker at a time (a key added
// while it is processed is queued again on done()), retried with per-key
// exponential backoff, and delayed adds keep the earlier time.
//
// Two lanes, each FIFO: a key added to the priority lane (add_after with
// Lane::kPriority, once its time has come) is handed out before keys in the
// ordinary lane. The operator puts a requeue for an agent's next slot there,
// so under a burst of slots the starts do not wait behind watch events
// (mostly echoes of its own writes), windows and deadlines. Retries after a
// failure (add_rate_limited) take the ordinary lane: a failing key never
// jumps the line.
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

namespace hb::controllers {

using namespace std::chrono_literals;

inline constexpr std::chrono::milliseconds kWorkqueueBackoffMin = 5ms;
inline constexpr std::chrono::milliseconds kWorkqueueBackoffMax = 1000s;

struct WorkQueueStats {
  uint64_t adds = 0;
  uint64_t retries = 0;
  size_t depth = 0;    // ready and not being processed
  size_t waiting = 0;  // delayed
  size_t processing = 0;
};

class WorkQueue {
 public:
  enum class Lane { kOrdinary, kPriority };
  using Clock = std::function<std::chrono::steady_clock::time_point()>;

  explicit WorkQueue(Clock clock = std::chrono::steady_clock::now,
                     std::chrono::milliseconds backoff_min = kWorkqueueBackoffMin,
                     std::chrono::milliseconds backoff_max = kWorkqueueBackoffMax);

  void add(const std::string& key);
  // Ready after `delay`, in `lane`; if the key already waits for an earlier
  // time, or is ready, nothing changes (but a ready key moves to the priority
  // lane when this time has come already); a later wait is moved forward.
  void add_after(const std::string& key, std::chrono::milliseconds delay,
                 Lane lane = Lane::kOrdinary);
  // After a failure: backoff_min * 2^failures, at most backoff_max.
  void add_rate_limited(const std::string& key);
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
  struct Wait {
    TimePoint ready;
    Lane lane;
  };
  void add_locked(const std::string& key, Lane lane);
  void add_after_locked(const std::string& key, std::chrono::milliseconds delay, Lane lane);
  void push_locked(const std::string& key, Lane lane);
  void promote_due_locked(TimePoint now);
  std::optional<std::string> pop_locked();

  Clock clock_;
  std::chrono::milliseconds backoff_min_, backoff_max_;
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  // Lanes may hold stale entries (a key moved to the priority lane, or already
  // handed out); pop_locked skips any entry whose key is not ready.
  std::deque<std::string> priority_lane_, ordinary_lane_;
  std::set<std::string> dirty_;           // queued or to be re-queued after done()
  std::set<std::string> dirty_priority_;  // the dirty keys that go in the priority lane
  std::set<std::string> processing_;
  size_t ready_ = 0;  // dirty keys not being processed
  std::map<std::string, Wait> waiting_;
  std::set<std::pair<TimePoint, std::string>> by_time_;
  std::map<std::string, int> failures_;
  uint64_t adds_ = 0, retries_ = 0;
  bool shutdown_ = false;
};

}  // namespace hb::controllers
