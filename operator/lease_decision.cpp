#include "operator/lease_decision.h"

#include <algorithm>

namespace hb::operator_ {

using kube::Json;

ObservedLease observe_lease(const std::optional<ObservedLease>& previous, const Json& lease,
                            MonoTime now) {
  ObservedLease seen;
  seen.holder = kube::string_at(lease, "spec/holderIdentity");
  const int64_t claimed = kube::int_at(lease, "spec/leaseDurationSeconds").value_or(0);
  seen.duration =
      std::chrono::seconds(std::clamp<int64_t>(claimed, 0, kObservedLeaseDurationMax.count()));
  seen.record = seen.holder + "\n" + kube::string_at(lease, "spec/renewTime") + "\n" +
                kube::string_at(lease, "spec/acquireTime") + "\n" + std::to_string(claimed) + "\n" +
                std::to_string(kube::int_at(lease, "spec/leaseTransitions").value_or(0));
  const bool unchanged = previous && previous->record == seen.record;
  seen.observed_at = unchanged ? previous->observed_at : now;
  return seen;
}

bool held_by_another(const ObservedLease& observed, const std::string& identity, MonoTime now) {
  if (observed.holder.empty() || observed.holder == identity) return false;
  return now < observed.observed_at + observed.duration;
}

}  // namespace hb::operator_
