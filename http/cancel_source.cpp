#include "http/http.h"

namespace hb::http {

void CancelSource::cancel() {
  std::map<uint64_t, std::function<void()>> callbacks;
  {
    std::lock_guard lock(mutex_);
    if (cancelled_) return;
    cancelled_ = true;
    callbacks.swap(callbacks_);
  }
  // Outside the lock: a callback may call remove() or cancel() again.
  for (auto& [id, fn] : callbacks) fn();
}

bool CancelSource::cancelled() const {
  std::lock_guard lock(mutex_);
  return cancelled_;
}

uint64_t CancelSource::add(std::function<void()> fn) {
  {
    std::lock_guard lock(mutex_);
    if (!cancelled_) {
      uint64_t id = next_id_++;
      callbacks_.emplace(id, std::move(fn));
      return id;
    }
  }
  fn();
  return 0;
}

void CancelSource::remove(uint64_t id) {
  std::lock_guard lock(mutex_);
  callbacks_.erase(id);
}

}  // namespace hb::http
