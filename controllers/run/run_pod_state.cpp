#include "controllers/run/run_pod_state.h"

#include <algorithm>

#include "api/exit_codes.h"
#include "api/hb_assert.h"
#include "api/heartbeat_pod.h"
#include "api/utf8.h"
#include "controllers/model/text_util.h"
#include "controllers/run/run_status.h"

namespace hb::controllers {

namespace {

// An exit code past this is 128 + the signal that ended the process.
constexpr int kSignalMax = 64;

// The runner container's status, by name only: the tools container's own
// termination message is the agent's to write and must never be read as
// the run's result.
const Json* runner_status(const Json& pod) {
  const Json* statuses = find_path(pod, "status/containerStatuses");
  if (statuses == nullptr || !statuses->is_array()) return nullptr;
  for (const Json& status : *statuses) {
    if (string_at(status, "name") == api::kRunnerContainerName) return &status;
  }
  return nullptr;
}

}  // namespace

bool runner_started(const Json& pod) {
  const Json* status = runner_status(pod);
  return status != nullptr && (find_path(*status, "state/running") != nullptr ||
                               find_path(*status, "state/terminated") != nullptr);
}

namespace {

const Json* terminated_state(const Json& pod) {
  const Json* status = runner_status(pod);
  return status == nullptr ? nullptr : find_path(*status, "state/terminated");
}

// Why a Pod has not started its runner, when it says: a waiting container
// (ImagePullBackOff, CreateContainerConfigError for a missing Secret key) or
// an unschedulable Pod. Empty when the Pod gives no reason.
std::string pod_waiting_detail(const Json* pod) {
  if (pod == nullptr) return {};
  if (const Json* status = runner_status(*pod)) {
    if (const Json* waiting = find_path(*status, "state/waiting")) {
      const std::string reason = string_at(*waiting, "reason");
      const std::string message = string_at(*waiting, "message");
      if (!reason.empty()) {
        return "its container is waiting: " + reason +
               (message.empty() ? "" : " (" + message + ")");
      }
    }
  }
  const Json* conditions = find_path(*pod, "status/conditions");
  if (conditions != nullptr && conditions->is_array()) {
    for (const Json& c : *conditions) {
      if (string_at(c, "type") == "PodScheduled" && string_at(c, "status") == "False") {
        return "its Pod is not scheduled: " + string_at(c, "reason") + " (" +
               string_at(c, "message") + ")";
      }
    }
  }
  return {};
}

bool job_condition(const Json* job, std::string_view type, std::string* reason = nullptr,
                   std::string* message = nullptr) {
  HB_ASSERT_MSG(!type.empty(), "a Job condition is looked up by its type");
  if (job == nullptr) return false;
  const Json* conditions = find_path(*job, "status/conditions");
  if (conditions == nullptr || !conditions->is_array()) return false;
  for (const Json& c : *conditions) {
    if (string_at(c, "type") == type && string_at(c, "status") == "True") {
      if (reason) *reason = string_at(c, "reason");
      if (message) *message = string_at(c, "message");
      return true;
    }
  }
  return false;
}

}  // namespace

bool pod_finished(const Json& pod) {
  const std::string phase = string_at(pod, "status/phase");
  return terminated_state(pod) != nullptr || phase == "Succeeded" || phase == "Failed";
}

const Json* pick_pod(const std::vector<const Json*>& pods) {
  const Json* best = nullptr;
  for (const Json* pod : pods) {
    if (pod == nullptr) continue;
    if (best == nullptr) {
      best = pod;
      continue;
    }
    const bool fin = pod_finished(*pod), best_fin = pod_finished(*best);
    if (fin != best_fin) {
      if (fin) best = pod;
      continue;
    }
    if (time_at(*pod, "metadata/creationTimestamp") >
        time_at(*best, "metadata/creationTimestamp")) {
      best = pod;
    }
  }
  // A finished Pod is picked over any still running; none only when none is given.
  for (const Json* pod : pods) {
    HB_ASSERT(pod == nullptr || (best != nullptr && (pod_finished(*best) || !pod_finished(*pod))));
  }
  return best;
}

PodExit pod_exit(const Json& pod) {
  PodExit exit;
  exit.pod_name = string_at(pod, "metadata/name");
  if (const Json* term = terminated_state(pod)) {
    exit.exit_code = int_at(*term, "exitCode").value_or(0);
    exit.terminated_reason = string_at(*term, "reason");
    exit.message = string_at(*term, "message");
    exit.finished_at = time_at(*term, "finishedAt");
    if (int64_t sig = int_at(*term, "signal").value_or(0); sig > 0) exit.signal = sig;
  } else {
    exit.exit_code = string_at(pod, "status/phase") == "Succeeded" ? 0 : 1;
    exit.terminated_reason = string_at(pod, "status/reason");
  }
  if (!exit.signal && exit.exit_code > api::kExitSignalBase &&
      exit.exit_code <= api::kExitSignalBase + kSignalMax) {
    exit.signal = exit.exit_code - api::kExitSignalBase;
  }
  HB_ASSERT_MSG(!exit.signal || *exit.signal > 0,
                "a signal that ended the runner is a positive number");
  return exit;
}

std::optional<std::string> container_config_error(const Json* pod) {
  if (pod == nullptr || pod_finished(*pod)) return std::nullopt;
  const Json* status = runner_status(*pod);
  const Json* waiting = status == nullptr ? nullptr : find_path(*status, "state/waiting");
  if (waiting == nullptr || string_at(*waiting, "reason") != "CreateContainerConfigError") {
    return std::nullopt;
  }
  std::string message = api::utf8_prefix_string(
      "the kubelet cannot start the runner: " + string_at(*waiting, "message") +
          "; check that spec.model.apiKeySecretRef names a Secret and key in this namespace",
      kRunMessageBytesMax);
  HB_ASSERT_MSG(message.size() <= kRunMessageBytesMax, "a run's message stays within its cap");
  return message;
}

std::optional<TimePoint> config_error_deadline(const Json* pod, TimePoint started) {
  static_assert(kContainerConfigErrorGrace > std::chrono::seconds::zero(),
                "a Secret made a moment after its Agent is waited for");
  if (!container_config_error(pod)) return std::nullopt;
  HB_ASSERT_MSG(pod != nullptr, "a config error is read from a Pod");
  return time_at(*pod, "metadata/creationTimestamp").value_or(started) + kContainerConfigErrorGrace;
}

std::string stall_message(std::chrono::seconds stall, const Json* pod, std::string_view tail) {
  std::string message =
      "no beat renewed the agent's Lease for " + std::to_string(stall.count()) + "s";
  if (std::string detail = pod_waiting_detail(pod); !detail.empty()) message += "; " + detail;
  message += tail;
  std::string capped = api::utf8_prefix_string(message, kRunMessageBytesMax);
  HB_ASSERT_MSG(capped.size() <= kRunMessageBytesMax, "a run's message stays within its cap");
  return capped;
}

PodsGoingAway pods_going_away(const std::vector<const Json*>& pods, TimePoint now) {
  PodsGoingAway going;
  for (const Json* p : pods) {
    if (p == nullptr || pod_finished(*p)) continue;
    if (auto deleting = time_at(*p, "metadata/deletionTimestamp")) {
      const TimePoint by = *deleting + kPodGoneSlack;
      if (now < by) {
        going.alive = true;
        going.gone_by = going.gone_by ? std::min(*going.gone_by, by) : by;
      }
    } else {
      going.alive = true;
    }
  }
  HB_ASSERT_MSG(!going.gone_by || (going.alive && *going.gone_by > now),
                "a Pod going away is given up later, and only while one is alive");
  return going;
}

JobState job_state(const Json* job) {
  JobState state;
  state.complete = job_condition(job, "Complete");
  state.failed = job_condition(job, "Failed", &state.fail_reason, &state.fail_message);
  state.deadline = state.failed && state.fail_reason == kReasonDeadlineExceeded;
  return state;
}

}  // namespace hb::controllers
