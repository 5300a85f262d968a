#include "operator/leader_election.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cstdio>
#include <random>
#include <thread>

#include "api/hb_assert.h"
#include "api/rfc3339.h"
#include "kube/errors.h"

namespace hb::operator_ {

using kube::Json;
using kube::TimePoint;

std::string make_identity() {
  char host[256] = {0};
  if (gethostname(host, sizeof host - 1) != 0) std::snprintf(host, sizeof host, "unknown");
  std::random_device rd;
  char id[17];
  std::snprintf(id, sizeof id, "%016llx",
                static_cast<unsigned long long>((uint64_t{rd()} << 32) | rd()));
  return std::string(host) + "_" + id;
}

std::optional<Json> lease_update(const std::optional<Json>& lease, const LeaderElectionConfig& c,
                                 TimePoint wall_now, bool held_by_another) {
  const std::string stamp = api::format_micro_time(wall_now);
  if (!lease) {
    return Json{{"apiVersion", "coordination.k8s.io/v1"},
                {"kind", "Lease"},
                {"metadata", {{"name", c.lease_name}, {"namespace", c.lease_namespace}}},
                {"spec",
                 {{"holderIdentity", c.identity},
                  {"leaseDurationSeconds", c.lease_duration.count()},
                  {"acquireTime", stamp},
                  {"renewTime", stamp},
                  {"leaseTransitions", 0}}}};
  }
  if (held_by_another) return std::nullopt;
  const bool ours = kube::string_at(*lease, "spec/holderIdentity") == c.identity;
  Json updated = *lease;
  updated["spec"]["holderIdentity"] = c.identity;
  updated["spec"]["leaseDurationSeconds"] = c.lease_duration.count();
  updated["spec"]["renewTime"] = stamp;
  if (!ours) {
    updated["spec"]["acquireTime"] = stamp;
    updated["spec"]["leaseTransitions"] =
        kube::int_at(*lease, "spec/leaseTransitions").value_or(0) + 1;
  }
  return updated;
}

namespace {

constexpr std::chrono::milliseconds kWatchdogPeriod{20};

int64_t steady_ns(MonoTime t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

// Sleeps up to `period`, waking early on stop.
void nap(std::chrono::milliseconds period, const std::atomic<bool>& stop) {
  constexpr std::chrono::milliseconds kStep{50};
  for (auto waited = std::chrono::milliseconds(0); waited < period && !stop; waited += kStep) {
    std::this_thread::sleep_for(kStep);
  }
}

}  // namespace

LeaderElector::LeaderElector(std::shared_ptr<kube::Client> client, LeaderElectionConfig config,
                             LeaderClocks clocks)
    : client_(std::move(client)), config_(std::move(config)), clocks_(std::move(clocks)) {
  HB_ASSERT(
      valid_lease_timing(config_.lease_duration, config_.renew_deadline, config_.retry_period));
}

LeaderElector::~LeaderElector() = default;

// client-go's optimistic renewal: a leader within its term writes on top of
// the Lease it wrote last, one request instead of a read and a write (half
// the leader's election traffic). Its resourceVersion makes any write by
// someone else since then a 409; any failure falls back to reading. A reply
// without a resourceVersion would make the write unconditional: read first.
bool LeaderElector::renew_on_last_written() {
  if (!last_written_ || !holding()) return false;
  if (kube::string_view_at(*last_written_, "metadata/resourceVersion").empty()) return false;
  const MonoTime now = clocks_.steady();
  auto update =
      lease_update(last_written_, config_, clocks_.wall() + config_.wall_clock_offset, false);
  kube::Result<Json> written = client_->replace(kube::resources::kLeases, config_.lease_namespace,
                                                config_.lease_name, *update);
  if (!written.ok()) {
    last_written_.reset();
    spdlog::debug("event=leader_renew_optimistic_failed error=\"{}\"", written.error().describe());
    return false;
  }
  last_written_ = std::move(written).value();
  renewed_at_ns_ = steady_ns(now);
  return true;
}

kube::Result<bool> LeaderElector::try_acquire_or_renew() {
  if (renew_on_last_written()) return true;
  std::optional<Json> lease;
  kube::Result<Json> read =
      client_->get(kube::resources::kLeases, config_.lease_namespace, config_.lease_name);
  if (read.ok()) {
    lease = std::move(read).value();
  } else if (!read.is(kube::ErrorKind::kNotFound)) {
    return std::move(read).error();
  }
  const MonoTime now = clocks_.steady();
  bool another = false;
  if (lease) {
    observed_ = observe_lease(observed_, *lease, now);
    another = held_by_another(*observed_, config_.identity, now);
  }
  auto update = lease_update(lease, config_, clocks_.wall() + config_.wall_clock_offset, another);
  if (!update) return false;
  // With resourceVersion in the body, a conflict means someone else wrote first.
  kube::Result<Json> written =
      lease ? client_->replace(kube::resources::kLeases, config_.lease_namespace,
                               config_.lease_name, *update)
            : client_->create(kube::resources::kLeases, config_.lease_namespace, *update);
  if (!written.ok()) return std::move(written).error();
  // Counted from before the write was sent: the deadline can only come early.
  renewed_at_ns_ = steady_ns(now);
  last_written_ = std::move(written).value();
  return true;
}

bool LeaderElector::holding() const {
  const int64_t at = renewed_at_ns_.load();
  if (at == 0 || displaced_) return false;
  const int64_t deadline =
      std::chrono::duration_cast<std::chrono::nanoseconds>(config_.renew_deadline).count();
  return steady_ns(clocks_.steady()) - at < deadline;
}

bool LeaderElector::acquire(const std::atomic<bool>& stop) {
  spdlog::info("event=leader_election_started lease={}/{} identity={}", config_.lease_namespace,
               config_.lease_name, config_.identity);
  while (!stop) {
    const kube::Result<bool> acquired = try_acquire_or_renew();
    if (acquired.ok() && acquired.value()) {
      spdlog::info("event=leader_elected lease={}/{} identity={}", config_.lease_namespace,
                   config_.lease_name, config_.identity);
      return true;
    }
    if (!acquired.ok()) {
      spdlog::debug("event=leader_acquire_failed error=\"{}\"", acquired.error().describe());
    }
    nap(config_.retry_period, stop);
  }
  return false;
}

bool LeaderElector::hold(const std::atomic<bool>& stop, const std::function<void()>& on_lost) {
  // The watchdog is the one place that decides the term is over: on time
  // (the renew deadline, even while a renew call hangs) or on a renewal that
  // found another holder.
  std::atomic<bool> done{false}, lost{false};
  std::thread watchdog([&] {
    while (!done) {
      if (!holding()) {
        spdlog::error(
            "event=leader_lost reason={} lease={}/{} identity={} renew_deadline_seconds={}",
            displaced_ ? "lease_held_by_another" : "renew_deadline", config_.lease_namespace,
            config_.lease_name, config_.identity, config_.renew_deadline.count());
        lost = true;
        on_lost();
        return;
      }
      std::this_thread::sleep_for(kWatchdogPeriod);
    }
  });
  while (!stop && !lost) {
    nap(config_.retry_period, stop);
    if (stop || lost) break;
    // Refused: another identity holds the Lease now. Stop acting at once,
    // not at the renew deadline (the watchdog sees it within 20 ms).
    const kube::Result<bool> renewed = try_acquire_or_renew();
    if (!renewed.ok()) {
      spdlog::warn("event=leader_renew_failed error=\"{}\"", renewed.error().describe());
    } else if (!renewed.value()) {
      displaced_ = true;
    }
  }
  done = true;
  watchdog.join();
  return !lost;
}

void LeaderElector::release() {
  last_written_.reset();
  kube::Result<Json> read =
      client_->get(kube::resources::kLeases, config_.lease_namespace, config_.lease_name);
  if (read.ok()) {
    Json& lease = read.value();
    if (kube::string_at(lease, "spec/holderIdentity") != config_.identity) return;
    lease["spec"]["holderIdentity"] = "";
    lease["spec"]["leaseDurationSeconds"] = 1;
    read = client_->replace(kube::resources::kLeases, config_.lease_namespace, config_.lease_name,
                            lease);
  }
  if (!read.ok()) {
    spdlog::warn("event=leader_release_failed error=\"{}\"", read.error().describe());
    return;
  }
  spdlog::info("event=leader_released lease={}/{}", config_.lease_namespace, config_.lease_name);
}

}  // namespace hb::operator_
