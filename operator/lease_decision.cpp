#include "operator/lease_decision.h"

namespace hb::operator_ {

using controllers::Json;

ObservedLease observe_lease(const std::optional<ObservedLease>& previous, const Json& lease,
                            MonoTime now) {
  ObservedLease seen;
  seen.holder = controllers::string_at(lease, "spec/holderIdentity");
  seen.duration =
      std::chrono::seconds(controllers::int_at(lease, "spec/leaseDurationSeconds").value_or(0));
  seen.record = seen.holder + "\n" + controllers::string_at(lease, "spec/renewTime") + "\n" +
                controllers::string_at(lease, "spec/acquireTime") + "\n" +
                std::to_string(seen.duration.count()) + "\n" +
                std::to_string(controllers::int_at(lease, "spec/leaseTransitions").value_or(0));
  const bool unchanged = previous && previous->record == seen.record;
  seen.observed_at = unchanged ? previous->observed_at : now;
  return seen;
}

bool held_by_another(const ObservedLease& observed, const std::string& identity, MonoTime now) {
  if (observed.holder.empty() || observed.holder == identity) return false;
  return now < observed.observed_at + observed.duration;
}

}  // namespace hb::operator_
