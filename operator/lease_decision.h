// Whether another candidate's Lease still holds, judged as client-go does:
// by how long ago, on THIS candidate's monotonic clock, the Lease record was
// last seen to change, never by comparing the holder's renewTime (the
// holder's clock) with ours. A holder whose clock runs 40 s ahead or behind
// is neither deposed early nor kept late.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "kube/json_path.h"

namespace hb::operator_ {

using MonoTime = std::chrono::steady_clock::time_point;

// The longest leaseDurationSeconds a Lease is believed: any longer (up to
// int64, which would overflow the clock) and a hostile or broken writer
// could keep every candidate waiting for good.
inline constexpr std::chrono::seconds kObservedLeaseDurationMax{3600};

// The Lease record as last seen, and when it was first seen that way.
struct ObservedLease {
  std::string holder;
  std::string record;  // holder, renewTime, acquireTime, duration, transitions: any change counts
  std::chrono::seconds duration{0};
  MonoTime observed_at{};
};

// Updates the observation with the Lease as read now: a changed record
// restarts the clock, an unchanged one keeps its first sighting.
ObservedLease observe_lease(const std::optional<ObservedLease>& previous, const kube::Json& lease,
                            MonoTime now);

// Another identity holds the Lease and it changed less than its duration ago.
bool held_by_another(const ObservedLease& observed, const std::string& identity, MonoTime now);

// client-go's bounds: leaseDuration > renewDeadline > retryPeriod x 1.2 (its
// jitter), so a leader fences itself before anyone may take over.
constexpr bool valid_lease_timing(std::chrono::milliseconds lease_duration,
                                  std::chrono::milliseconds renew_deadline,
                                  std::chrono::milliseconds retry_period) {
  return lease_duration > renew_deadline && renew_deadline * 10 > retry_period * 12;
}

}  // namespace hb::operator_
