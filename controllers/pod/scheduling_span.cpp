#include "controllers/pod/scheduling_span.h"

#include <algorithm>

#include "api/hb_assert.h"
#include "api/trace_context.h"
#include "controllers/model/run_view.h"

namespace hb::controllers {

std::optional<otlp::Span> scheduling_span(const Json& run, const CreatedJob& job) {
  const std::optional<api::TraceParent> trace = api::run_trace_parent(run_trace_uid(run));
  if (!trace) return std::nullopt;
  const std::string source = string_at(run, "spec/invocationSource", "manual");
  std::optional<TimePoint> asked = source == kSourceScheduler
                                       ? time_at(run, "spec/scheduledTime")
                                       : time_at(run, "metadata/creationTimestamp");
  if (!asked) asked = time_at(run, "metadata/creationTimestamp");
  otlp::Span span;
  span.trace_id = trace->trace_id;
  span.span_id = trace->parent_span_id;
  span.name = kSchedulingSpanName;
  span.kind = otlp::SpanKind::kProducer;
  span.end = job.created_at;
  span.start = std::min(asked.value_or(job.created_at), job.created_at);
  span.attributes = {{"k8s.namespace.name", namespace_of(run)},
                     {"heartbeat.agent.name", string_at(run, "spec/agentRef/name")},
                     {"heartbeat.run.name", name_of(run)},
                     {"heartbeat.invocation_source", source},
                     {"k8s.job.name", job.name},
                     {"k8s.job.uid", job.uid}};
  span.status = otlp::StatusCode::kOk;
  HB_ASSERT_MSG(span.start <= span.end,
                "the scheduling span ends when the Job is made, not before it starts");
  return span;
}

}  // namespace hb::controllers
