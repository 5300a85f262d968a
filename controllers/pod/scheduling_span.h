// The operator's span of a heartbeat: from the moment the heartbeat was
// asked for (a scheduled run's slot, else the run's creation) to its Job's
// creation. It lives in the trace the run's uid names, with the span id the
// runner's TRACEPARENT names as its parent (api::run_trace_parent), so the
// runner's invoke_agent span is this span's child in any trace backend.
// Kind PRODUCER: it starts work another process does later. Pure.
#pragma once

#include <optional>
#include <string>

#include "controllers/model/json_util.h"
#include "otlp/span.h"

namespace hb::controllers {

inline constexpr const char* kSchedulingSpanName = "schedule_heartbeat";

struct CreatedJob {
  std::string name;
  std::string uid;
  TimePoint created_at;
};

// nullopt when the run's uid is not a UUID (no trace to join).
std::optional<otlp::Span> scheduling_span(const Json& run, const CreatedJob& job);

}  // namespace hb::controllers
