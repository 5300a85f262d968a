#include "controllers/shell/concurrency_gate.h"

#include <cassert>

#include "controllers/json_util.h"
#include "controllers/run_view.h"

namespace hb::controllers {

ConcurrencyGate::ConcurrencyGate(int64_t cap, SteadyClock steady, Wake wake)
    : cap_(cap), steady_(std::move(steady)), wake_(std::move(wake)) {
  assert(cap_ >= 0 && cap_ <= kMaxConcurrentRunsMax);
}

// A run is in started_ or in reserved_, never both: a run shown started
// loses its reservation, and a started run is never reserved again.
int64_t ConcurrencyGate::in_use_locked() const {
  return static_cast<int64_t>(started_.size() + reserved_.size());
}

void ConcurrencyGate::erase_waiting_locked(const std::string& agent) {
  auto it = waiting_.find(agent);
  if (it == waiting_.end()) return;
  line_.erase(&it->second.candidate);
  waiting_.erase(it);
}

void ConcurrencyGate::expire_locked(std::chrono::steady_clock::time_point now) {
  std::erase_if(reserved_, [now](const auto& r) { return r.second <= now; });
  std::vector<std::string> lapsed;
  for (const auto& [agent, w] : waiting_) {
    if (w.expires <= now) lapsed.push_back(agent);
  }
  for (const std::string& agent : lapsed) erase_waiting_locked(agent);
}

std::vector<const StartCandidate*> ConcurrencyGate::line_locked() const {
  return {line_.begin(), line_.end()};
}

Admission ConcurrencyGate::admit(const StartCandidate& candidate) {
  const auto now = steady_();
  std::lock_guard lock(mutex_);
  expire_locked(now);
  if (started_.count(candidate.run) != 0 || reserved_.count(candidate.run) != 0) {
    erase_waiting_locked(candidate.agent);
    return Admission::yes();
  }
  Admission a = admit_start(cap_, in_use_locked(), line_locked(), candidate);
  erase_waiting_locked(candidate.agent);
  if (a.admitted) {
    if (cap_ > 0) reserved_[candidate.run] = now + kReservationTtl;
    return a;
  }
  auto [it, inserted] = waiting_.emplace(candidate.agent, Waiting{candidate, now + kWaitingTtl});
  assert(inserted);
  line_.insert(&it->second.candidate);
  return a;
}

void ConcurrencyGate::wake_if_freed(std::unique_lock<std::mutex>& lock, int64_t before) {
  const int64_t now_in_use = in_use_locked();
  if (now_in_use >= before) return;
  const std::vector<std::string> agents = agents_to_wake(cap_, now_in_use, line_locked());
  lock.unlock();  // the queue takes its own lock
  for (const std::string& agent : agents) wake_(agent);
}

void ConcurrencyGate::release(const std::string& run_key) {
  std::unique_lock lock(mutex_);
  const int64_t before = in_use_locked();
  reserved_.erase(run_key);
  wake_if_freed(lock, before);
}

void ConcurrencyGate::withdraw(const std::string& agent) {
  std::lock_guard lock(mutex_);
  erase_waiting_locked(agent);
}

void ConcurrencyGate::observe_run(const std::string& run_key, const Json* run, bool has_job) {
  if (cap_ <= 0) return;
  const std::optional<RunPhase> phase =
      run != nullptr ? parse_run_phase(string_view_at(*run, "status/phase")) : std::nullopt;
  const bool ended = run != nullptr && phase && is_final(*phase);
  const bool started = run != nullptr && !ended && (has_job || phase == RunPhase::kRunning);
  const auto now = steady_();
  std::unique_lock lock(mutex_);
  const int64_t before = in_use_locked();
  if (started) {
    started_.insert(run_key);
  } else {
    started_.erase(run_key);
  }
  if (run == nullptr && has_job) {
    // A Job whose run the cache does not hold: not yet (the watches race)
    // or no more (the garbage collector is behind). It holds a place as a
    // reservation would, so the cap errs on the safe side, but an orphan
    // cannot hold it past kReservationTtl.
    reserved_.emplace(run_key, now + kReservationTtl);
  } else if (started || ended || run == nullptr) {
    // A Queued run without its Job keeps its reservation: its start is under way.
    reserved_.erase(run_key);
  }
  wake_if_freed(lock, before);
}

int64_t ConcurrencyGate::in_use() const {
  std::lock_guard lock(mutex_);
  return in_use_locked();
}

std::size_t ConcurrencyGate::waiting() const {
  std::lock_guard lock(mutex_);
  return waiting_.size();
}

}  // namespace hb::controllers
