// A HeartbeatRun as the decisions read it. Pure.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "api/call_durations.h"
#include "api/context_document.h"
#include "controllers/model/json_util.h"

namespace hb::controllers {

enum class RunPhase { kQueued, kRunning, kSucceeded, kFailed, kCancelled, kTimedOut };

std::string_view to_string(RunPhase phase);
std::optional<RunPhase> parse_run_phase(std::string_view text);
bool is_final(RunPhase phase);
// Whether a final run carries its phase as the heartbeat.dev/phase label:
// `-l heartbeat.dev/phase=Failed` finds the runs to look at. A succeeded run
// (most of them) carries none: the status subresource ignores metadata, so
// the label is a write of its own.
bool phase_is_labelled(std::string_view final_phase);

inline constexpr std::string_view kSourceScheduler = "scheduler";
inline constexpr std::string_view kSourceManual = "manual";
inline constexpr std::string_view kSourceCallback = "callback";

struct RunUsage {
  int64_t input_tokens = 0;
  int64_t output_tokens = 0;
  double cost_cents = 0;
  bool operator==(const RunUsage&) const = default;
};

// How far before its creationTimestamp a run's requested-at stamp may lie
// (the stamp is the operator's clock at the request, before the API server
// stamped the second it stored it in).
inline constexpr std::chrono::seconds kRequestedAtBeforeCreatedMax{2};

struct RunView {
  std::string name, ns, uid;
  std::string agent_name;
  std::string source;          // scheduler | manual | callback
  std::string trigger_detail;  // spec.triggerDetail: the annotation's or the caller's reason
  std::optional<TimePoint> scheduled_time;
  TimePoint created{};
  // The order runs were asked for in: the wakeup endpoint's microsecond
  // stamp (kAnnotationRequestedAt) when there is one, else `created`.
  TimePoint requested{};
  bool cancel = false;
  RunPhase phase = RunPhase::kQueued;  // stored; Queued when unset
  bool cost_recorded = false;
  std::string job_name;  // status.jobName: set once the Job was created
  std::string job_uid;   // status.jobUID: that Job's UID (its Pods are matched by it)
  std::optional<TimePoint> started_at;
  std::optional<TimePoint> finished_at;
  std::optional<TimePoint> pause_until;
  std::optional<int64_t> exit_code;
  std::string reason, message;  // status.reason / status.message
  int64_t mention_depth = 0;    // mentions.h: 0 unless a mention started it
  RunUsage usage;
  bool operator==(const RunView&) const = default;
};

RunView view_run(const Json& run);

// A run as its Job and context document name it (job_builder.h).
struct StartingRun {
  std::string api_version, kind;  // for the ownerReferences to it
  std::string ns;
  api::RunIdentity identity;  // all but the deadline (the Agent's timeout from now)
  std::string trace_uid;      // run_trace_uid
  // The run's own text (run_after_job.h) when its Job is made before it;
  // identity.uid is empty then.
  std::string to_make;
};

StartingRun starting_run(const Json& run);

// The uid a run's trace id is made of (api::run_trace_parent): its
// kAnnotationTraceId when it has one, else its uid.
std::string run_trace_uid(const Json& run);

// Whether run a finished after run b, in the order the next heartbeat's
// context picks earlier runs (job_builder.h) and the cache keeps their
// outputs (run_index.h): by finish time, the same second by name (the later
// name newer). One definition, so the two always pick the same runs.
inline bool finished_after(TimePoint a_at, std::string_view a_name, TimePoint b_at,
                           std::string_view b_name) {
  return a_at != b_at ? a_at > b_at : a_name > b_name;
}

// Final with its cost recorded: nothing about it changes any more.
inline bool is_settled(const RunView& run) {
  return is_final(run.phase) && run.cost_recorded;
}
// The same read from a stored run, without building its view.
bool is_settled(const Json& run);

RunUsage usage_from_status(const Json& status);
// status.usage.modelCallDurations: the operator's own write, checked when
// it was made (run_final_status.cpp); unset when absent.
std::optional<api::CallDurations> call_durations_from_status(const Json& status);

}  // namespace hb::controllers
