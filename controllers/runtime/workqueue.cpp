#include "controllers/runtime/workqueue.h"

#include <algorithm>

#include "api/hb_assert.h"

namespace hb::controllers {

namespace {
constexpr int kBackoffExponentMax = 40;  // 2^40 * 5 ms is far past any max
}

WorkQueue::WorkQueue(Clock clock, std::chrono::milliseconds backoff_min,
                     std::chrono::milliseconds backoff_max)
    : clock_(std::move(clock)), backoff_min_(backoff_min), backoff_max_(backoff_max) {
  HB_ASSERT(backoff_min_.count() > 0 && backoff_min_ <= backoff_max_);
}

void WorkQueue::add_locked(const std::string& key) {
  if (shutdown_) return;
  // A ready key no longer waits.
  if (auto it = waiting_.find(key); it != waiting_.end()) {
    by_time_.erase({it->second, key});
    waiting_.erase(it);
  }
  if (dirty_.count(key)) return;
  ++adds_;
  dirty_.insert(key);
  if (processing_.count(key)) return;  // re-queued by done()
  queue_.push_back(key);
  cv_.notify_one();
}

void WorkQueue::add(const std::string& key) {
  std::lock_guard lock(mutex_);
  add_locked(key);
}

void WorkQueue::add_after(const std::string& key, std::chrono::milliseconds delay) {
  if (delay.count() <= 0) {
    add(key);
    return;
  }
  std::lock_guard lock(mutex_);
  if (shutdown_) return;
  if (dirty_.count(key) && !processing_.count(key)) return;  // already ready
  const TimePoint ready = clock_() + delay;
  auto it = waiting_.find(key);
  if (it != waiting_.end()) {
    if (it->second <= ready) return;  // the earlier time wins
    by_time_.erase({it->second, key});
    it->second = ready;
  } else {
    it = waiting_.emplace(key, ready).first;
  }
  by_time_.insert({ready, it->first});
  cv_.notify_all();
}

std::chrono::milliseconds WorkQueue::backoff_for(const std::string& key) const {
  std::lock_guard lock(mutex_);
  auto it = failures_.find(key);
  const int exponent = std::min(it == failures_.end() ? 0 : it->second, kBackoffExponentMax);
  const double delay =
      static_cast<double>(backoff_min_.count()) * static_cast<double>(int64_t{1} << exponent);
  return std::chrono::milliseconds(
      static_cast<int64_t>(std::min(delay, static_cast<double>(backoff_max_.count()))));
}

void WorkQueue::add_rate_limited(const std::string& key, std::chrono::milliseconds at_least) {
  const std::chrono::milliseconds delay = std::max(backoff_for(key), at_least);
  {
    std::lock_guard lock(mutex_);
    ++failures_[key];
    ++retries_;
  }
  add_after(key, delay);
}

void WorkQueue::forget(const std::string& key) {
  std::lock_guard lock(mutex_);
  failures_.erase(key);
}

void WorkQueue::promote_due_locked(TimePoint now) {
  while (!by_time_.empty() && by_time_.begin()->first <= now) {
    const std::string key(by_time_.begin()->second);  // a copy: the view goes with waiting_'s
    by_time_.erase(by_time_.begin());
    waiting_.erase(key);
    add_locked(key);
  }
}

std::optional<std::string> WorkQueue::pop_locked() {
  if (queue_.empty()) return std::nullopt;
  std::string key = queue_.front();
  queue_.pop_front();
  dirty_.erase(key);
  processing_.insert(key);
  return key;
}

std::optional<std::string> WorkQueue::get() {
  std::unique_lock lock(mutex_);
  for (;;) {
    if (shutdown_) return std::nullopt;
    promote_due_locked(clock_());
    if (auto key = pop_locked()) return key;
    if (by_time_.empty()) {
      cv_.wait(lock);
    } else {
      // The injected clock may be a fake one; wait on the real clock for the
      // same span, at most a second, then look again.
      const auto span = std::min<std::chrono::steady_clock::duration>(
          by_time_.begin()->first - clock_(), std::chrono::seconds(1));
      cv_.wait_for(lock, std::max<std::chrono::steady_clock::duration>(span, 1ms));
    }
  }
}

std::optional<std::string> WorkQueue::try_get() {
  std::lock_guard lock(mutex_);
  if (shutdown_) return std::nullopt;
  promote_due_locked(clock_());
  return pop_locked();
}

void WorkQueue::done(const std::string& key) {
  std::lock_guard lock(mutex_);
  processing_.erase(key);
  if (dirty_.count(key)) {
    queue_.push_back(key);
    cv_.notify_one();
  }
}

void WorkQueue::shutdown() {
  std::lock_guard lock(mutex_);
  shutdown_ = true;
  cv_.notify_all();
}

bool WorkQueue::shutting_down() const {
  std::lock_guard lock(mutex_);
  return shutdown_;
}

WorkQueueStats WorkQueue::stats() const {
  std::lock_guard lock(mutex_);
  return {adds_, retries_, queue_.size(), waiting_.size(), processing_.size()};
}

std::optional<std::chrono::steady_clock::time_point> WorkQueue::next_ready_at() const {
  std::lock_guard lock(mutex_);
  if (by_time_.empty()) return std::nullopt;
  return by_time_.begin()->first;
}

}  // namespace hb::controllers
