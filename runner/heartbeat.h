// Beats: the runner's sign of life. beat() records the time and then calls
// the chained callbacks outside its lock; the LeaseExtender, one such
// callback, renews the agent's Lease at most once per interval, so a stalled
// runner's Lease runs out and the operator fails the run as stalled.
// The loop's cumulative usage rides on the beats (report_usage): a renewal
// is due as soon as it changed, so a runner killed after a model call is
// still charged for it (api/usage_report.h).
#pragma once

#include <chrono>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "api/usage_report.h"
#include "kube/errors.h"
#include "runner/clock.h"

namespace hb::runner {

class Heartbeat {
 public:
  using Callback = std::function<void(TimePoint)>;
  explicit Heartbeat(Clock& clock) : clock_(clock) {}

  // Appends to the chain; call before beats start.
  void add_callback(Callback callback);
  void beat();
  // Records the run's cumulative usage (run name left empty), then beats.
  void report_usage(const api::UsageReport& usage);
  api::UsageReport usage() const;
  std::optional<TimePoint> last_beat() const;
  long long beats() const;

 private:
  Clock& clock_;
  mutable std::mutex mutex_;
  std::optional<TimePoint> last_;
  long long count_ = 0;
  api::UsageReport usage_;
  std::vector<Callback> callbacks_;
};

// Renews the agent's Lease (spec.renewTime = now, leaseDurationSeconds) and,
// when given, writes the usage report onto it. Implemented against the
// Kubernetes client in main; a failure is its Error.
class LeaseRenewer {
 public:
  virtual ~LeaseRenewer() = default;
  virtual kube::Done renew(TimePoint now, std::chrono::seconds duration,
                           const api::UsageReport* usage) = 0;
};

class LeaseExtender {
 public:
  using Log = std::function<void(const std::string&)>;
  using UsageSource = std::function<api::UsageReport()>;
  LeaseExtender(LeaseRenewer& renewer, std::chrono::seconds renew_interval,
                std::chrono::seconds stall_window, Log log_warning, UsageSource usage = {});

  // The Heartbeat callback. Renews when no attempt was made yet, when the
  // interval has passed since the last attempt, when the clock went
  // backwards, or when the usage changed since it was last written.
  // Renewal errors are logged and counted.
  void on_beat(TimePoint now);
  Heartbeat::Callback callback();

  int attempts() const;
  int failures() const;

 private:
  LeaseRenewer& renewer_;
  std::chrono::seconds interval_;
  std::chrono::seconds stall_window_;  // written as the Lease's leaseDurationSeconds
  Log log_warning_;
  UsageSource usage_;
  mutable std::mutex mutex_;
  std::optional<TimePoint> last_attempt_;
  std::optional<api::UsageReport> written_usage_;  // on the Lease as of the last renewal
  bool in_flight_ = false;
  int attempts_ = 0;
  int failures_ = 0;
};

}  // namespace hb::runner
