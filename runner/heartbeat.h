// Beats: the runner's sign of life. beat() records the time and then calls
// the chained callbacks outside its lock; the LeaseExtender, one such
// callback, renews the agent's Lease at most once per interval, so a stalled
// runner's Lease runs out and the operator fails the run as stalled.
#pragma once

#include <chrono>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "runner/clock.h"

namespace hb::runner {

class Heartbeat {
 public:
  using Callback = std::function<void(TimePoint)>;
  explicit Heartbeat(Clock& clock) : clock_(clock) {}

  // Appends to the chain; call before beats start.
  void add_callback(Callback callback);
  void beat();
  std::optional<TimePoint> last_beat() const;
  long long beats() const;

 private:
  Clock& clock_;
  mutable std::mutex mutex_;
  std::optional<TimePoint> last_;
  long long count_ = 0;
  std::vector<Callback> callbacks_;
};

// Renews the agent's Lease (spec.renewTime = now, leaseDurationSeconds).
// Implemented against the Kubernetes client in main; throws on failure.
class LeaseRenewer {
 public:
  virtual ~LeaseRenewer() = default;
  virtual void renew(TimePoint now, std::chrono::seconds duration) = 0;
};

class LeaseExtender {
 public:
  using Log = std::function<void(const std::string&)>;
  LeaseExtender(LeaseRenewer& renewer, std::chrono::seconds renew_interval,
                std::chrono::seconds lease_duration, Log log_warning);

  // The Heartbeat callback. Renews when no attempt was made yet, when the
  // interval has passed since the last attempt, or when the clock went
  // backwards. Renewal errors are logged, never thrown.
  void on_beat(TimePoint now);
  Heartbeat::Callback callback();

  int attempts() const;
  int failures() const;

 private:
  LeaseRenewer& renewer_;
  std::chrono::seconds interval_;
  std::chrono::seconds duration_;
  Log log_warning_;
  mutable std::mutex mutex_;
  std::optional<TimePoint> last_attempt_;
  bool in_flight_ = false;
  int attempts_ = 0;
  int failures_ = 0;
};

}  // namespace hb::runner
