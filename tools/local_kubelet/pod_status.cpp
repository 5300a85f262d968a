#include "tools/local_kubelet/pod_status.h"

#include <sys/wait.h>

#include <algorithm>

#include "tools/local_kubelet/launch_plan.h"  // kPodIp: the one address a Pod has here

namespace hb::local_kubelet {
namespace {

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

Json state_of(const ContainerState& c) {
  switch (c.phase) {
    case ContainerPhase::kWaiting: {
      Json waiting = {{"reason", c.reason}};
      if (!c.message.empty()) waiting["message"] = c.message;
      return {{"waiting", waiting}};
    }
    case ContainerPhase::kRunning:
      return {{"running", {{"startedAt", c.started_at}}}};
    case ContainerPhase::kTerminated:
      break;
  }
  const Termination& t = c.termination;
  const bool ok = t.exit.exit_code == 0;
  Json terminated = {{"exitCode", t.exit.exit_code},
                     {"reason", t.reason.empty() ? (ok ? "Completed" : "Error") : t.reason},
                     {"startedAt", t.started_at},
                     {"finishedAt", t.finished_at}};
  if (t.exit.signal) terminated["signal"] = *t.exit.signal;
  if (!t.message.empty()) terminated["message"] = t.message;
  if (!c.info.container_id.empty()) terminated["containerID"] = c.info.container_id;
  return {{"terminated", terminated}};
}

Json container_status(const ContainerState& c) {
  const bool running = c.phase == ContainerPhase::kRunning;
  Json s = {{"name", c.info.name}, {"image", c.info.image}, {"imageID", ""},
            {"ready", running},    {"started", running},    {"restartCount", 0},
            {"state", state_of(c)}};
  if (!c.info.container_id.empty()) s["containerID"] = c.info.container_id;
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

Termination termination_from_json(const Json& terminated) {
  Termination t;
  if (!terminated.is_object()) return t;
  auto text = [&](const char* key) {
    auto it = terminated.find(key);
    return it != terminated.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  auto number = [&](const char* key) -> std::optional<int> {
    auto it = terminated.find(key);
    if (it == terminated.end() || !it->is_number_integer()) return std::nullopt;
    return it->get<int>();
  };
  t.exit.exit_code = number("exitCode").value_or(0);
  t.exit.signal = number("signal");
  t.reason = text("reason");
  t.message = text("message");
  t.started_at = text("startedAt");
  t.finished_at = text("finishedAt");
  return t;
}

std::string pod_phase(const std::vector<ContainerState>& containers) {
  auto count = [&](ContainerPhase phase) {
    return std::count_if(containers.begin(), containers.end(),
                         [&](const ContainerState& c) { return c.phase == phase; });
  };
  if (containers.empty() || count(ContainerPhase::kWaiting) > 0) return "Pending";
  if (count(ContainerPhase::kRunning) > 0) return "Running";
  const bool all_ok = std::all_of(containers.begin(), containers.end(),
                                  [](const auto& c) { return c.termination.exit.exit_code == 0; });
  return all_ok ? "Succeeded" : "Failed";
}

Json status_patch(const std::vector<ContainerState>& containers, const std::string& start_time,
                  const std::string& now) {
  const std::string phase = pod_phase(containers);
  const bool done = phase == "Succeeded" || phase == "Failed";
  const bool ready = !containers.empty() &&
                     std::all_of(containers.begin(), containers.end(),
                                 [](const auto& c) { return c.phase == ContainerPhase::kRunning; });
  const char* not_ready = done ? "PodCompleted" : "ContainersNotReady";
  Json statuses = Json::array();
  for (const auto& c : containers) statuses.push_back(container_status(c));
  Json status = {
      {"phase", phase},
      {"hostIP", kPodIp},
      {"conditions", Json::array({condition("Initialized", true, now, done ? "PodCompleted" : ""),
                                  condition("Ready", ready, now, ready ? "" : not_ready),
                                  condition("ContainersReady", ready, now, ready ? "" : not_ready),
                                  condition("PodScheduled", true, now)})},
      {"containerStatuses", std::move(statuses)}};
  if (!start_time.empty()) {
    status["startTime"] = start_time;
    status["podIP"] = kPodIp;
    status["podIPs"] = Json::array({{{"ip", kPodIp}}});
  }
  return {{"status", std::move(status)}};
}

}  // namespace hb::local_kubelet
