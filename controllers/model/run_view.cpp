#include "controllers/model/run_view.h"

#include <array>
#include <chrono>

#include "api/hb_assert.h"
#include "controllers/model/mentions.h"
#include "controllers/model/names.h"

namespace hb::controllers {

namespace {
constexpr std::array<std::string_view, 6> kPhaseNames = {"Queued", "Running",   "Succeeded",
                                                         "Failed", "Cancelled", "TimedOut"};
// One name per phase, the last one's last.
static_assert(static_cast<size_t>(RunPhase::kTimedOut) + 1 == kPhaseNames.size());
}  // namespace

std::string_view to_string(RunPhase phase) {
  HB_ASSERT(static_cast<size_t>(phase) < kPhaseNames.size());
  return kPhaseNames[static_cast<size_t>(phase)];
}

std::optional<RunPhase> parse_run_phase(std::string_view text) {
  // Index i of kPhaseNames is the phase numbered i, the first one's first.
  static_assert(static_cast<size_t>(RunPhase::kQueued) == 0);
  for (size_t i = 0; i < kPhaseNames.size(); ++i) {
    if (kPhaseNames[i] == text) return static_cast<RunPhase>(i);
  }
  return std::nullopt;
}

bool is_final(RunPhase phase) {
  return phase != RunPhase::kQueued && phase != RunPhase::kRunning;
}

bool phase_is_labelled(std::string_view final_phase) {
  return final_phase != to_string(RunPhase::kSucceeded);
}

RunUsage usage_from_status(const Json& status) {
  RunUsage usage;
  usage.input_tokens = int_at(status, "usage/inputTokens").value_or(0);
  usage.output_tokens = int_at(status, "usage/outputTokens").value_or(0);
  usage.cost_cents = number_at(status, "usage/costCents").value_or(0);
  return usage;
}

std::optional<api::CallDurations> call_durations_from_status(const Json& status) {
  const Json* durations = find_path(status, "usage/modelCallDurations");
  if (durations == nullptr) return std::nullopt;
  std::string ignored;
  return api::call_durations_from_json(*durations, ignored);
}

bool is_settled(const Json& run) {
  const auto phase = parse_run_phase(string_view_at(run, "status/phase"));
  return phase && is_final(*phase) && bool_at(run, "status/costRecorded");
}

RunView view_run(const Json& run) {
  // Each section is looked up once; fields are read relative to it.
  static const Json kEmpty = Json::object();
  auto section = [&](std::string_view name) -> const Json& {
    const Json* p = find_path(run, name);
    return p != nullptr ? *p : kEmpty;
  };
  const Json& metadata = section("metadata");
  const Json& spec = section("spec");
  const Json& status = section("status");
  RunView v;
  v.name = string_view_at(metadata, "name");
  v.ns = string_view_at(metadata, "namespace");
  v.uid = string_view_at(metadata, "uid");
  v.agent_name = string_view_at(spec, "agentRef/name");
  v.source = string_view_at(spec, "invocationSource", kSourceManual);
  v.trigger_detail = string_view_at(spec, "triggerDetail");
  v.scheduled_time = time_at(spec, "scheduledTime");
  v.created = time_at(metadata, "creationTimestamp").value_or(TimePoint{});
  v.requested = v.created;
  if (const Json* at = find_path(metadata, "annotations"); at != nullptr && at->is_object()) {
    auto it = at->find(kAnnotationRequestedAt);
    const auto requested =
        it != at->end() && it->is_string() ? parse_rfc3339(it->get<std::string>()) : std::nullopt;
    // Believed only near creationTimestamp (whole seconds, stamped a moment
    // after the request), so a hand-written value cannot move a run far.
    if (requested && *requested >= v.created - kRequestedAtBeforeCreatedMax &&
        *requested < v.created + std::chrono::seconds(1)) {
      v.requested = *requested;
    }
  }
  v.mention_depth = mention_depth(run);
  v.cancel = bool_at(spec, "cancel");
  v.phase = parse_run_phase(string_view_at(status, "phase")).value_or(RunPhase::kQueued);
  v.cost_recorded = bool_at(status, "costRecorded");
  v.job_name = string_view_at(status, "jobName");
  v.job_uid = string_view_at(status, "jobUID");
  v.started_at = time_at(status, "startedAt");
  v.finished_at = time_at(status, "finishedAt");
  v.pause_until = time_at(status, "pauseUntil");
  v.exit_code = int_at(status, "exitCode");
  v.reason = string_at(status, "reason");
  v.message = string_at(status, "message");
  v.usage = usage_from_status(status);
  return v;
}

StartingRun starting_run(const Json& run) {
  RunView view = view_run(run);
  StartingRun out{
      string_at(run, "apiVersion"), string_at(run, "kind"), std::move(view.ns), {}, "", ""};
  api::RunIdentity& id = out.identity;
  id.name = std::move(view.name);
  id.uid = std::move(view.uid);
  id.invocation_source = std::move(view.source);
  id.trigger_detail = std::move(view.trigger_detail);
  id.metadata = api::usable_run_metadata(find_path(run, "spec/metadata"));
  id.scheduled_time = view.scheduled_time;
  out.trace_uid = run_trace_uid(run);
  return out;
}

std::string run_trace_uid(const Json& run) {
  const std::string_view traced = annotation_at(run, kAnnotationTraceId);
  return traced.empty() ? string_at(run, "metadata/uid") : std::string(traced);
}

}  // namespace hb::controllers
