// Lease-based leader election (client-go's leaderelection): acquire the
// Lease when it is free or expired, renew it every retry period, and report
// loss when it could not be renewed within the renew deadline. The decision
// whether to take or keep the Lease is a pure function of (lease, identity, now).
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "controllers/json_util.h"
#include "kube/client.h"

namespace hb::operator_ {

struct LeaderElectionConfig {
  std::string lease_namespace;
  std::string lease_name;
  std::string identity;  // host name plus a random id
  std::chrono::seconds lease_duration{15};
  std::chrono::seconds renew_deadline{10};
  std::chrono::seconds retry_period{2};
};

// What to write to take or keep the Lease now; nullopt while another holder's
// Lease is still valid. `lease` is the current object (nullopt: none yet).
std::optional<controllers::Json> lease_update(const std::optional<controllers::Json>& lease,
                                              const LeaderElectionConfig& config,
                                              controllers::TimePoint now);

std::string make_identity();  // "<hostname>_<16 hex>"
std::string format_micro_time(controllers::TimePoint t);

class LeaderElector {
 public:
  LeaderElector(std::shared_ptr<kube::Client> client, LeaderElectionConfig config);
  // Blocks until leader (true) or `stop` (false).
  bool acquire(const std::atomic<bool>& stop);
  // Blocks renewing until `stop` (returns true) or a renewal deadline is missed (false).
  bool hold(const std::atomic<bool>& stop);
  // Best effort on shutdown: clears the holder so a successor need not wait.
  void release();
  const LeaderElectionConfig& config() const { return config_; }

 private:
  bool try_acquire_or_renew();
  std::shared_ptr<kube::Client> client_;
  LeaderElectionConfig config_;
};

}  // namespace hb::operator_
