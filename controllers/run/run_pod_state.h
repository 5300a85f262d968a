// What a run's Pods and Job say, as observe_run reads them: the runner
// container's state (never the tools container's), a container the kubelet
// cannot configure, the Job's conditions. Pure.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "controllers/model/json_util.h"

namespace hb::controllers {

// The runner container has terminated, or the Pod has ended.
bool pod_finished(const Json& pod);

// The run's Pod that tells the most: a terminated one first, else the newest.
const Json* pick_pod(const std::vector<const Json*>& pods);

// What a finished Pod's runner left: its exit (1 for a failed Pod whose
// container never reported one) and its termination message.
struct PodExit {
  std::string pod_name;
  int64_t exit_code = 0;
  std::optional<int64_t> signal;  // from the kubelet, or an exit code past 128
  std::string terminated_reason;  // OOMKilled, Error, ...
  std::string message;            // the runner's result JSON
  std::optional<TimePoint> finished_at;
};
PodExit pod_exit(const Json& pod);

// The runner container is running or has terminated: the kubelet got past
// configuring it (its Secret references resolved).
bool runner_started(const Json& pod);
// The kubelet's message when it cannot configure the runner's container. The
// operator never reads Secrets: this is where a missing API key shows up.
std::optional<std::string> container_config_error(const Json* pod);

// When a config error fails the run: its grace after the Pod was created.
std::optional<TimePoint> config_error_deadline(const Json* pod, TimePoint started);

// A stall, with why the Pod waits when it says.
std::string stall_message(std::chrono::seconds stall, const Json* pod, std::string_view tail = {});

// Pods not yet finished: whether any is still there (running, or deleted less
// than kPodGoneSlack ago) and when the last of the deleted ones is given up.
struct PodsGoingAway {
  bool alive = false;
  std::optional<TimePoint> gone_by;
};
PodsGoingAway pods_going_away(const std::vector<const Json*>& pods, TimePoint now);

// The Job's Complete and Failed conditions.
struct JobState {
  bool complete = false;
  bool failed = false;
  bool deadline = false;  // failed with reason DeadlineExceeded
  std::string fail_reason, fail_message;
};
JobState job_state(const Json* job);

}  // namespace hb::controllers
