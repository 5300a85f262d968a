// Plays the kubelet for the operator's Pods on a control plane without
// nodes: marks each new Pod Running, renews the agent's Lease like the
// runner's beats, and after a while terminates it with an exit code and a
// termination message, all through the pods/status subresource. What each
// Pod does is up to a script the test supplies.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "kube/client.h"
#include "kube/informer.h"

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
  FakeKubelet(std::shared_ptr<kube::Client> client, std::string ns, Script script);
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
  void loop();
  void step(const nlohmann::json& pod);
  void beat(const nlohmann::json& pod);

  std::shared_ptr<kube::Client> client_;
  std::string ns_;
  Script script_;
  std::unique_ptr<kube::Informer> pods_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  mutable std::mutex mutex_;
  std::map<std::string, PodState> states_;  // by pod uid
};

}  // namespace hb::testing
