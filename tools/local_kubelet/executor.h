// The imperative shell of hb-local-kubelet: watches Pods, binds unscheduled
// ones to its node, runs each container as a local process (launch_plan.h),
// writes their status like a kubelet, and finishes graceful deletions. One
// thread does all of it, so a Pod's state needs no locks.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "kube/client.h"
#include "kube/informer.h"
#include "tools/local_kubelet/launch_plan.h"
#include "tools/local_kubelet/node_agent.h"
#include "tools/local_kubelet/options.h"
#include "tools/local_kubelet/pod_status.h"

namespace hb::local_kubelet {

using Clock = std::chrono::steady_clock;

// How often the loop looks at its processes when no Pod changes.
inline constexpr std::chrono::milliseconds kTickInterval{200};
// A Pod waiting for its image mapping, a Secret, ... is looked at again after this.
inline constexpr std::chrono::seconds kWaitingRetry{2};
inline constexpr std::chrono::seconds kImagePullRetry{10};
// Grace for a deleted Pod without deletionGracePeriodSeconds/terminationGracePeriodSeconds.
inline constexpr int kTerminationGraceSecondsDefault = 30;
// As the kubelet's minimumGracePeriodInSeconds: even a forced deletion gives
// the process this long after SIGTERM to write its result.
inline constexpr int kTerminationGraceSecondsMin = 2;
// On the executor's own SIGTERM: TERM to every process, this long, then KILL.
inline constexpr std::chrono::seconds kShutdownGrace{5};
// A Pod object that vanished (forced deletion): its process gets this long.
inline constexpr std::chrono::seconds kVanishedGrace{2};
inline constexpr std::chrono::seconds kWriteRetry{1};

class Executor {
 public:
  Executor(std::shared_ptr<kube::Client> client, Options options);
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  // Runs until stop(); then stops every process and writes their status.
  void run();
  void stop();  // thread-safe

 private:
  // kPending: not started; kRunning: some container started; kExited: all
  // ended, status maybe unwritten; kDone: nothing more to do.
  enum class Stage { kPending, kRunning, kExited, kDone };
  struct ContainerRun {
    ContainerState state;    // as its containerStatuses entry says
    ContainerLaunch launch;  // once planned
    pid_t pid = -1;          // while it runs
  };
  struct PodRecord {
    std::string ns, name, uid, pod_dir;
    Stage stage = Stage::kPending;
    std::vector<ContainerRun> containers;  // spec order
    std::string start_time;                // the Pod's startTime
    Clock::time_point next_attempt{};
    std::string last_waiting;          // reason + message last written
    std::optional<Json> status_patch;  // not yet written
    Clock::time_point next_write{};
    bool term_sent = false, kill_sent = false;
    Clock::time_point kill_at{};
    bool running() const;  // any container's process
  };

  void tick();
  void reap(PodRecord& rec, bool block);
  bool reap_container(const PodRecord& rec, ContainerRun& run, bool block);
  void init_record(const Json& pod, PodRecord& rec);
  void recover(const Json& pod, PodRecord& rec);
  void handle(const Json& pod, Clock::time_point now);
  void handle_deletion(const Json& pod, PodRecord& rec, Clock::time_point now);
  void stop_processes(PodRecord& rec, Clock::time_point now, std::chrono::seconds grace);
  void try_start(const Json& pod, PodRecord& rec, Clock::time_point now);
  std::optional<PlanResult> plan(const Json& pod, PodRecord& rec, Clock::time_point now);
  void set_waiting(PodRecord& rec, const PlanProblem& problem, Clock::time_point now);
  void start_containers(PodRecord& rec);
  void refresh_status(PodRecord& rec);
  void write_status(PodRecord& rec, Clock::time_point now);
  void bind(const Json& pod);
  void finish_without_running(PodRecord& rec, const std::string& reason,
                              const std::string& message);
  void shutdown();
  int active_pods() const;

  std::shared_ptr<kube::Client> client_;
  Options options_;
  NodeAgent node_;
  std::unique_ptr<kube::Informer> pods_;
  std::map<std::string, PodRecord> records_;  // by uid

  std::atomic<bool> stopping_{false};
  std::mutex wake_mutex_;
  std::condition_variable wake_;
  bool changed_ = false;
};

}  // namespace hb::local_kubelet
