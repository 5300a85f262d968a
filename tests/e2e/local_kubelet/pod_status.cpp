#include "tests/e2e/local_kubelet/pod_status.h"

#include <sys/wait.h>

namespace hb::local_kubelet {
namespace {

constexpr const char* kPodIp = "127.0.0.1";

std::string utf8_suffix(const std::string& text, std::size_t max_bytes) {
  if (text.size() <= max_bytes) return text;
  std::size_t start = text.size() - max_bytes;
  while (start < text.size() && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) ++start;
  return text.substr(start);
}

std::string utf8_prefix(const std::string& text, std::size_t max_bytes) {
  if (text.size() <= max_bytes) return text;
  std::size_t end = max_bytes;
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
  return text.substr(0, end);
}

Json condition(const char* type, bool status, const std::string& now,
               const std::string& reason = "") {
  Json c = {{"type", type},
            {"status", status ? "True" : "False"},
            {"lastProbeTime", nullptr},
            {"lastTransitionTime", now}};
  if (!reason.empty()) c["reason"] = reason;
  return c;
}

Json container_status(const ContainerInfo& c, bool ready, Json state) {
  Json s = {{"name", c.name},           {"image", c.image}, {"imageID", ""},
            {"ready", ready},           {"started", ready}, {"restartCount", 0},
            {"state", std::move(state)}};
  if (!c.container_id.empty()) s["containerID"] = c.container_id;
  return s;
}

}  // namespace

ExitStatus exit_from_wait_status(int wait_status) {
  if (WIFSIGNALED(wait_status)) {
    const int sig = WTERMSIG(wait_status);
    return {128 + sig, sig};
  }
  if (WIFEXITED(wait_status)) return {WEXITSTATUS(wait_status), std::nullopt};
  return {128, std::nullopt};
}

std::string log_tail(const std::string& log, std::size_t max_bytes, std::size_t max_lines) {
  if (max_lines == 0) return "";
  std::size_t pos = log.size();
  if (pos > 0 && log[pos - 1] == '\n') --pos;  // a final newline ends the last line
  std::size_t start = 0;
  for (std::size_t lines = 0; lines < max_lines; ++lines) {
    const std::size_t nl = pos == 0 ? std::string::npos : log.rfind('\n', pos - 1);
    if (nl == std::string::npos) {
      start = 0;
      break;
    }
    start = nl + 1;
    pos = nl;
  }
  return utf8_suffix(log.substr(start), max_bytes);
}

std::string termination_message(const std::string& file_content, const std::string& log,
                                int exit_code, const std::string& policy) {
  if (!file_content.empty()) return utf8_prefix(file_content, kTerminationMessageBytesMax);
  if (policy == "FallbackToLogsOnError" && exit_code != 0) return log_tail(log);
  return "";
}

Json waiting_patch(const ContainerInfo& c, const std::string& reason, const std::string& message,
                   const std::string& now) {
  return {
      {"status",
       {{"phase", "Pending"},
        {"hostIP", kPodIp},
        {"conditions", Json::array({condition("Initialized", true, now),
                                    condition("Ready", false, now, "ContainersNotReady"),
                                    condition("ContainersReady", false, now, "ContainersNotReady"),
                                    condition("PodScheduled", true, now)})},
        {"containerStatuses",
         Json::array({container_status(
             c, false, {{"waiting", {{"reason", reason}, {"message", message}}}})})}}}};
}

Json running_patch(const ContainerInfo& c, const std::string& started_at, const std::string& now) {
  return {{"status",
           {{"phase", "Running"},
            {"hostIP", kPodIp},
            {"podIP", kPodIp},
            {"podIPs", Json::array({{{"ip", kPodIp}}})},
            {"startTime", started_at},
            {"conditions",
             Json::array({condition("Initialized", true, now), condition("Ready", true, now),
                          condition("ContainersReady", true, now),
                          condition("PodScheduled", true, now)})},
            {"containerStatuses", Json::array({container_status(
                                      c, true, {{"running", {{"startedAt", started_at}}}})})}}}};
}

Json terminated_patch(const ContainerInfo& c, const Termination& t, const std::string& now) {
  const bool ok = t.exit.exit_code == 0;
  Json terminated = {{"exitCode", t.exit.exit_code},
                     {"reason", t.reason.empty() ? (ok ? "Completed" : "Error") : t.reason},
                     {"startedAt", t.started_at},
                     {"finishedAt", t.finished_at}};
  if (t.exit.signal) terminated["signal"] = *t.exit.signal;
  if (!t.message.empty()) terminated["message"] = t.message;
  if (!c.container_id.empty()) terminated["containerID"] = c.container_id;
  Json status = {
      {"phase", ok ? "Succeeded" : "Failed"},
      {"hostIP", kPodIp},
      {"conditions", Json::array({condition("Initialized", true, now, "PodCompleted"),
                                  condition("Ready", false, now, "PodCompleted"),
                                  condition("ContainersReady", false, now, "PodCompleted"),
                                  condition("PodScheduled", true, now)})},
      {"containerStatuses",
       Json::array({container_status(c, false, {{"terminated", terminated}})})}};
  if (!t.started_at.empty()) status["startTime"] = t.started_at;
  return {{"status", std::move(status)}};
}

}  // namespace hb::local_kubelet
