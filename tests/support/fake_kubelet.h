// Plays the kubelet for the operator's Pods on a control plane without
// nodes: marks each new Pod Running, renews the agent's Lease like the
// runner's beats, and after a while terminates it with an exit code and a
// termination message, all through the pods/status subresource. What each
// Pod does is up to a script the test supplies.
//
// With one worker (the tests) one thread reads every Pod every 100 ms and
// sends each Pod's requests in turn. At fleet size that thread was the
// bottleneck, not the operator: a Pod costs a Secret read and two status
// writes, 1,000 Pods a minute leave each 20 ms, and an API server answering
// in 25-30 ms held 2 s Pods for 90 s. With more workers each plays the Pods
// whose key hashes to it, from the informer's events and each Pod's own
// next due time (its end, its next beat), without reading the rest.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "kube/client.h"
#include "kube/informer.h"
#include "tests/support/due_times.h"

namespace hb::testing {

struct PodScript {
  std::chrono::milliseconds run_for{500};  // Running this long, then terminate
  int exit_code = 0;
  std::string termination_message;  // the runner's result JSON
  bool hang = false;                // stay Running forever
  bool beat = true;                 // renew the agent's Lease while Running
  std::string terminated_reason;    // e.g. OOMKilled
};

// The pricing the test Agents use with FakeKubelet::result: 0.01 cent per
// output token, input tokens free.
inline constexpr double kFakeOutputCentsPerMillionTokens = 10000;
inline constexpr double kFakeInputCentsPerMillionTokens = 0;

class FakeKubelet {
 public:
  using Script = std::function<PodScript(const nlohmann::json& pod)>;
  FakeKubelet(std::shared_ptr<kube::Client> client, std::string ns, Script script, int workers = 1);
  ~FakeKubelet();
  void start();
  void stop();
  int pods_seen() const;
  // A result JSON as heartbeat-runner writes it, with output tokens that
  // cost `cost_cents` at kFakeOutputCentsPerMillionTokens (input is free):
  // the operator charges tokens x the Agent's pricing, not the figure.
  static std::string result(double cost_cents, std::optional<int> pause_minutes = std::nullopt,
                            const std::string& stop_reason = "completed");

 private:
  struct PodState {
    std::chrono::steady_clock::time_point started;
    PodScript script;
    bool running_written = false;
    bool finished = false;
    std::chrono::steady_clock::time_point last_beat;
  };
  using SteadyTime = std::chrono::steady_clock::time_point;
  // One worker: every Pod, every kLoopInterval.
  void loop();
  // One of several workers: its own Pods, when due.
  void serve(int worker);
  std::size_t worker_of(const std::string& key) const;
  void schedule(const std::string& key, SteadyTime at);
  // When the Pod needs its next step; nullopt: at its next change only.
  std::optional<SteadyTime> next_due(const std::string& uid, SteadyTime now) const;
  void step(const nlohmann::json& pod);
  void beat(const nlohmann::json& pod);

  std::shared_ptr<kube::Client> client_;
  std::string ns_;
  Script script_;
  std::unique_ptr<kube::Informer> pods_;
  const int workers_;
  std::atomic<bool> stop_{false};
  std::vector<std::thread> threads_;
  // Each worker's Pods by due time, under due_mutex_.
  std::mutex due_mutex_;
  std::condition_variable due_changed_;
  std::vector<DueTimes<SteadyTime>> due_;
  mutable std::mutex mutex_;
  std::map<std::string, PodState> states_;  // by pod uid
};

}  // namespace hb::testing
