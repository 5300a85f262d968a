#include "runner/heartbeat.h"

#include <exception>

namespace hb::runner {

void Heartbeat::add_callback(Callback callback) {
  std::lock_guard lock(mutex_);
  callbacks_.push_back(std::move(callback));
}

void Heartbeat::beat() {
  TimePoint now = clock_.now();
  std::vector<Callback> callbacks;
  {
    std::lock_guard lock(mutex_);
    last_ = now;
    ++count_;
    callbacks = callbacks_;
  }
  for (const auto& callback : callbacks) callback(now);
}

void Heartbeat::report_usage(const api::UsageReport& usage) {
  {
    std::lock_guard lock(mutex_);
    usage_ = usage;
  }
  beat();
}

api::UsageReport Heartbeat::usage() const {
  std::lock_guard lock(mutex_);
  return usage_;
}

std::optional<TimePoint> Heartbeat::last_beat() const {
  std::lock_guard lock(mutex_);
  return last_;
}

long long Heartbeat::beats() const {
  std::lock_guard lock(mutex_);
  return count_;
}

LeaseExtender::LeaseExtender(LeaseRenewer& renewer, std::chrono::seconds renew_interval,
                             std::chrono::seconds stall_window, Log log_warning, UsageSource usage)
    : renewer_(renewer),
      interval_(renew_interval),
      stall_window_(stall_window),
      log_warning_(std::move(log_warning)),
      usage_(std::move(usage)) {}

void LeaseExtender::on_beat(TimePoint now) {
  std::optional<api::UsageReport> usage;
  if (usage_) usage = usage_();
  {
    std::lock_guard lock(mutex_);
    if (in_flight_) return;
    const bool usage_changed = usage && usage != written_usage_;
    bool due = !last_attempt_ || now < *last_attempt_ || now - *last_attempt_ >= interval_ ||
               usage_changed;
    if (!due) return;
    last_attempt_ = now;
    in_flight_ = true;
    ++attempts_;
  }
  const kube::Done renewed = renewer_.renew(now, stall_window_, usage ? &*usage : nullptr);
  const std::string error = renewed.ok() ? std::string() : renewed.error().describe();
  {
    std::lock_guard lock(mutex_);
    in_flight_ = false;
    if (!error.empty()) ++failures_;
    if (error.empty() && usage) written_usage_ = usage;
  }
  if (!error.empty() && log_warning_) log_warning_("lease renewal failed: " + error);
}

Heartbeat::Callback LeaseExtender::callback() {
  return [this](TimePoint now) { on_beat(now); };
}

int LeaseExtender::attempts() const {
  std::lock_guard lock(mutex_);
  return attempts_;
}

int LeaseExtender::failures() const {
  std::lock_guard lock(mutex_);
  return failures_;
}

}  // namespace hb::runner
