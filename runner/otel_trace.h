// One OpenTelemetry trace per heartbeat, in the GenAI semantic conventions'
// names: an `invoke_agent` span for the heartbeat, a `chat` span per model
// call and an `execute_tool` span per tool call, built from the transcript's
// events (SpanRecorder). Pure but for the clock and the random ids; the
// encoding and the export are otlp/'s, the run's metrics otel_metrics.h's.
//
// Attributes carry names, models, token counts and outcomes only: never a
// prompt, a reply, tool arguments or output, a key or a header.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "api/trace_context.h"
#include "otlp/exporter_config.h"
#include "otlp/span.h"
#include "runner/clock.h"
#include "runner/transcript.h"

namespace hb::runner::otel {

// Spans one run may record; later ones are dropped and counted.
inline constexpr std::size_t kSpansPerRunMax = 512;
// One attribute value's bytes at most (a model-chosen tool name, say).
inline constexpr std::size_t kAttributeValueBytesMax = 256;
inline constexpr const char* kServiceNameDefault = "heartbeat-runner";
// The instrumentation scope of the runner's spans and metrics.
inline constexpr const char* kScopeName = "heartbeat-runner";

// The span model and its export are otlp/'s, shared with the operator.
using otlp::Attributes;
using otlp::AttributeValue;
using otlp::Resource;
using otlp::Span;
using otlp::SpanKind;
using otlp::StatusCode;

// W3C trace context: the trace this run's root span joins (api/trace_context.h).
using api::parse_traceparent;
using api::TraceParent;

// What the root span says about the run.
struct RunIdentity {
  std::string agent_name;
  std::string agent_namespace;
  std::string run_name;
  std::string provider;  // gen_ai.provider.name: "openai", "anthropic"
  std::string request_model;
};

// Where an ended span goes (the exporter's queue).
using SpanSink = std::function<void(Span)>;

// A Transcript that forwards every event to `inner` and turns the loop's
// events into spans, each handed to `sink` as it ends (under the
// recorder's lock: the sink must not call back). Thread-safe.
class SpanRecorder final : public Transcript {
 public:
  // `gen_ai_latest`: OTEL_SEMCONV_STABILITY_OPT_IN names gen_ai_latest_experimental
  // (chat spans then also carry the cache token counts).
  SpanRecorder(Transcript& inner, const Clock& clock, RunIdentity identity, TimePoint started,
               const std::optional<TraceParent>& parent, SpanSink sink, bool gen_ai_latest = false);
  void emit(nlohmann::json event) override;
  // Ends the root span (and any span still open) with the run's stop reason;
  // a non-empty error_type marks it failed.
  void finish(const std::string& stop_reason, const std::string& error_type, long long input_tokens,
              long long output_tokens, TimePoint finished);
  // Every chat span ended so far (the metrics' source), oldest first.
  std::vector<Span> chat_spans() const;
  // The root span's start and (once finished) end.
  std::pair<TimePoint, TimePoint> window() const;
  std::size_t dropped() const;
  // The W3C traceparent of the chat span open now (the provider request's
  // header), else empty.
  std::string chat_traceparent() const;
  const std::string& trace_id() const { return trace_id_; }
  const RunIdentity& identity() const { return identity_; }

 private:
  void observe(const nlohmann::json& event, TimePoint now);
  void open_chat(TimePoint now);
  void close_chat(const nlohmann::json& reply, TimePoint now);
  void open_tool(const nlohmann::json& call, TimePoint now);
  void close_tool(const nlohmann::json& result, TimePoint now);
  void end_open(std::optional<Span>& span, TimePoint now, const std::string& why);
  void keep(Span span);
  Span child(std::string name, SpanKind kind, TimePoint now) const;

  Transcript& inner_;
  const Clock& clock_;
  RunIdentity identity_;
  std::string trace_id_;
  bool gen_ai_latest_ = false;
  mutable std::mutex mutex_;
  Span root_;
  bool root_done_ = false;
  std::optional<Span> chat_;
  std::optional<Span> tool_;
  SpanSink sink_;
  std::vector<Span> chats_;
  std::size_t recorded_ = 0;
  std::size_t dropped_ = 0;
};

// The resource of a run's telemetry: service.name (kServiceNameDefault when
// the config names none), the run's namespace and names, then
// OTEL_RESOURCE_ATTRIBUTES.
Resource run_resource(otlp::ExporterConfig config, const RunIdentity& identity);

}  // namespace hb::runner::otel
