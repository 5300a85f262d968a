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

#include "kube/client.h"
#include "kube/json_path.h"
#include "operator/lease_decision.h"

namespace hb::operator_ {

struct LeaderElectionConfig {
  std::string lease_namespace;
  std::string lease_name;
  std::string identity;  // host name plus a random id
  std::chrono::seconds lease_duration{15};
  std::chrono::seconds renew_deadline{10};
  std::chrono::seconds retry_period{2};
  std::chrono::seconds wall_clock_offset{0};  // tests: a node whose clock is off
};

// The elector's clocks: the steady one times the term (renewals, the renew
// deadline), the wall one is what renewTime says. Tests inject fakes.
struct LeaderClocks {
  std::function<MonoTime()> steady = [] { return std::chrono::steady_clock::now(); };
  std::function<kube::TimePoint()> wall = [] { return std::chrono::system_clock::now(); };
};

// What to write to take or keep the Lease now; nullopt while another
// holder's Lease still holds (`held_by_another`, lease_decision.h). `lease`
// is the current object (nullopt: none yet); `wall_now` is what renewTime says.
std::optional<kube::Json> lease_update(const std::optional<kube::Json>& lease,
                                       const LeaderElectionConfig& config, kube::TimePoint wall_now,
                                       bool held_by_another);

std::string make_identity();  // "<hostname>_<16 hex>"

// Acquires and renews the Lease through its own client (no rate limit shared
// with the workers, each call bounded well under the renew deadline). A
// watchdog fences on time alone: once renewDeadline passed since the last
// successful renewal, `holding()` turns false at once (the workers' client
// checks it before every write) and `on_lost` runs (the manager exits), even
// while a renew call hangs. Since renewDeadline < leaseDuration, that happens
// before any other candidate may take the Lease.
class LeaderElector {
 public:
  LeaderElector(std::shared_ptr<kube::Client> client, LeaderElectionConfig config,
                LeaderClocks clocks = {});
  ~LeaderElector();
  // Blocks until leader (true) or `stop` (false).
  bool acquire(const std::atomic<bool>& stop);
  // Renews until `stop` (returns true); calls on_lost from the watchdog when
  // the renew deadline passes (it is expected not to return).
  bool hold(const std::atomic<bool>& stop, const std::function<void()>& on_lost);
  // True while the last renewal is younger than the renew deadline and no
  // renewal found the Lease held by another identity.
  bool holding() const;
  // Best effort on shutdown: clears the holder so a successor need not wait.
  void release();
  const LeaderElectionConfig& config() const { return config_; }
  // One attempt: true when this identity holds the Lease now, false while
  // another's holds (acquire and hold call it every retry period; the
  // simulation steps it on its own clock).
  kube::Result<bool> try_acquire_or_renew();

 private:
  // True when the renewal written on top of last_written_ succeeded.
  bool renew_on_last_written();

  std::shared_ptr<kube::Client> client_;
  LeaderElectionConfig config_;
  LeaderClocks clocks_;
  std::optional<ObservedLease> observed_;
  // Nanoseconds since the steady clock's epoch of the last successful write
  // of the Lease (0: never).
  std::atomic<int64_t> renewed_at_ns_{0};
  std::atomic<bool> displaced_{false};  // a renewal found another holder
  // The Lease as this elector's last write left it (the server's reply);
  // touched only by the thread that renews.
  std::optional<kube::Json> last_written_;
};

}  // namespace hb::operator_
