// Pure: the Pod status patches a kubelet writes (pods/status subresource,
// JSON merge patch), and the exit details that go into them.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace hb::local_kubelet {

using Json = nlohmann::json;

// Kubernetes reads at most this much of the termination message file ...
inline constexpr std::size_t kTerminationMessageBytesMax = 4096;
// ... and with FallbackToLogsOnError at most this much of the log's tail.
inline constexpr std::size_t kFallbackLogBytesMax = 2048;
inline constexpr std::size_t kFallbackLogLinesMax = 80;

struct ExitStatus {
  int exit_code = 0;
  std::optional<int> signal;  // killed by this signal (exit_code = 128 + signal)
};

// From a waitpid() status.
ExitStatus exit_from_wait_status(int wait_status);

// The last max_lines lines of `log`, then at most max_bytes of them (cut at
// a UTF-8 boundary).
std::string log_tail(const std::string& log, std::size_t max_bytes = kFallbackLogBytesMax,
                     std::size_t max_lines = kFallbackLogLinesMax);

// The message a kubelet puts into state.terminated.message.
std::string termination_message(const std::string& file_content, const std::string& log,
                                int exit_code, const std::string& policy);

struct ContainerInfo {
  std::string name;
  std::string image;
  std::string container_id;  // "local://<node>/<pid>"
};

struct Termination {
  ExitStatus exit;
  std::string reason;  // "" = Completed for 0, Error otherwise
  std::string message;
  std::string started_at;
  std::string finished_at;
};

enum class ContainerPhase { kWaiting, kRunning, kTerminated };

// One container as its containerStatuses entry shows it.
struct ContainerState {
  ContainerInfo info;
  ContainerPhase phase = ContainerPhase::kWaiting;
  std::string reason, message;  // waiting
  std::string started_at;       // running
  Termination termination;      // terminated
};

// A containerStatuses entry's state.terminated as written earlier (for an
// executor that restarted).
Termination termination_from_json(const Json& terminated);

// The phase a kubelet derives for restartPolicy Never: Pending while any
// container waits, Running while any runs, then Succeeded when every one
// exited 0, else Failed.
std::string pod_phase(const std::vector<ContainerState>& containers);

// The pods/status merge patch for the Pod's containers (all of them: the
// patch replaces containerStatuses). start_time: "" until the first started.
Json status_patch(const std::vector<ContainerState>& containers, const std::string& start_time,
                  const std::string& now);

}  // namespace hb::local_kubelet
