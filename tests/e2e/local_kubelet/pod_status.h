// Pure: the Pod status patches a kubelet writes (pods/status subresource,
// JSON merge patch), and the exit details that go into them.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

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

// Pending with the container waiting (ErrImagePull, CreateContainerConfigError, ...).
Json waiting_patch(const ContainerInfo& c, const std::string& reason, const std::string& message,
                   const std::string& now);
// Running since started_at.
Json running_patch(const ContainerInfo& c, const std::string& started_at, const std::string& now);

struct Termination {
  ExitStatus exit;
  std::string reason;  // "" = Completed for 0, Error otherwise
  std::string message;
  std::string started_at;
  std::string finished_at;
};
// Succeeded (exit 0) or Failed, with state.terminated.
Json terminated_patch(const ContainerInfo& c, const Termination& t, const std::string& now);

}  // namespace hb::local_kubelet
