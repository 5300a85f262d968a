// The capacity benchmark's node: the Job controller and the kubelet of the
// simulation (tests/sim/node.h's writes), reduced to what a steady fleet
// needs: every runner succeeds after a fixed span, beating its agent's Lease
// on the way. It follows the server's change logs of Jobs and Pods instead
// of scanning every Job on each step (the simulation's node is O(Jobs) a
// step, which at 100,000 agents is the whole run's time).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "tests/sim/api_server.h"

namespace hb::bench {

struct CapacityNodeTimes {
  std::chrono::milliseconds pod_create{1000};  // Job seen -> Pod made
  std::chrono::milliseconds pod_start{1000};   // Pod made -> runner running
  std::chrono::milliseconds work{20000};       // runner running -> result
  std::chrono::milliseconds beat_every{10000};
  std::chrono::milliseconds pod_delete_grace{1000};
};

class CapacityNode {
 public:
  CapacityNode(sim::ApiServer& server, CapacityNodeTimes times) : server_(server), times_(times) {}

  // Everything due by `now`.
  void step(sim::TimePoint now);
  std::optional<sim::TimePoint> next_due() const;
  // Where its reading of each change log stands (what it still needs).
  uint64_t jobs_position() const { return jobs_at_; }
  uint64_t pods_position() const { return pods_at_; }
  uint64_t pods_made() const { return pods_made_; }

 private:
  enum class Step { kMakePod, kStart, kBeat, kEnd, kFinalize };
  struct Due {
    Step step;
    std::string ns, name;  // the Job (kMakePod) or the Pod
  };
  void read_changes(sim::TimePoint now);
  void perform(const Due& due, sim::TimePoint now);
  void make_pod(const std::string& ns, const std::string& job_name, sim::TimePoint now);
  void beat(const sim::Json& pod, sim::TimePoint now);
  void end(const sim::Json& pod, sim::TimePoint now);

  sim::ApiServer& server_;
  CapacityNodeTimes times_;
  std::multimap<sim::TimePoint, Due> due_;
  std::map<std::string, sim::TimePoint> running_since_;  // "ns/pod"
  uint64_t jobs_at_ = 0, pods_at_ = 0, pods_made_ = 0;
};

}  // namespace hb::bench
