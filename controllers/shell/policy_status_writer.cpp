#include "controllers/shell/policy_status_writer.h"

#include <spdlog/spdlog.h>

#include <thread>

#include "controllers/model/managed_namespaces.h"

namespace hb::controllers {

PolicyStatusWriter::PolicyStatusWriter(std::shared_ptr<kube::Client> client,
                                       const PolicyIndex& index, StartedByAgent started_by_agent,
                                       Metrics& metrics, Clock clock)
    : client_(std::move(client)),
      index_(index),
      started_by_agent_(std::move(started_by_agent)),
      metrics_(metrics),
      clock_(std::move(clock)) {}

int PolicyStatusWriter::write_changed() {
  // No policy, nothing to count: the per-agent counts are not copied.
  if (index_.size() == 0) return 0;
  // Before every ledger record is read a team's spend would show too low.
  if (!index_.spend_known()) return 0;
  const TimePoint now = clock_();
  int written = 0;
  for (const PolicyIndex::Report& r : index_.reports(now, started_by_agent_())) {
    if (!namespace_refusal(r.spec.ns, own_namespace_).empty()) continue;
    const Json* stored = r.stored_status.is_object() ? &r.stored_status : nullptr;
    Json desired = desired_policy_status(r.spec, stored, r.tally, now);
    if (stored != nullptr && same_json(*stored, desired)) continue;
    Json patch = Json::object();
    patch.emplace("status", std::move(desired));
    kube::Result<Json> done = client_->merge_patch_status(kube::resources::kHeartbeatPolicies,
                                                          r.spec.ns, r.spec.name, patch);
    if (!done.ok()) {
      // Not the leader, or gone meanwhile: the next round decides again.
      spdlog::debug("event=policy_status_write_failed policy={}/{} error=\"{}\"", r.spec.ns,
                    r.spec.name, done.error().describe());
      continue;
    }
    metrics_.counter_add("heartbeat_api_writes_total", {{"kind", kWritePolicyStatus}});
    ++written;
  }
  return written;
}

void PolicyStatusWriter::run_until(const std::atomic<bool>& stop) {
  constexpr auto kTick = std::chrono::milliseconds(100);
  auto next = std::chrono::steady_clock::now();
  while (!stop) {
    if (std::chrono::steady_clock::now() >= next) {
      write_changed();
      next = std::chrono::steady_clock::now() + kPolicyStatusInterval;
    }
    std::this_thread::sleep_for(kTick);
  }
}

}  // namespace hb::controllers
