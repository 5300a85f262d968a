// One OpenTelemetry trace per heartbeat, in the GenAI semantic conventions'
// names: an `invoke_agent` span for the heartbeat, a `chat` span per model
// call and an `execute_tool` span per tool call, built from the transcript's
// events (SpanRecorder) and encoded as OTLP/JSON (encode_otlp_traces). Pure
// but for the clock and the random ids; export is otel_exporter.h's.
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
#include <variant>
#include <vector>

#include "api/trace_context.h"
#include "runner/clock.h"
#include "runner/transcript.h"

namespace hb::runner::otel {

// Spans one run may record; later ones are dropped and counted.
inline constexpr std::size_t kSpansPerRunMax = 512;
// One attribute value's bytes at most (a model-chosen tool name, say).
inline constexpr std::size_t kAttributeValueBytesMax = 256;

using AttributeValue = std::variant<std::string, long long>;
using Attributes = std::vector<std::pair<std::string, AttributeValue>>;

// OTLP's SpanKind and Status.code numbers.
enum class SpanKind : int { kInternal = 1, kClient = 3 };
enum class StatusCode : int { kUnset = 0, kOk = 1, kError = 2 };

struct Span {
  std::string trace_id;        // 32 lower-case hex digits
  std::string span_id;         // 16
  std::string parent_span_id;  // 16, or empty for a root
  std::string name;
  SpanKind kind = SpanKind::kInternal;
  TimePoint start;
  TimePoint end;
  Attributes attributes;
  StatusCode status = StatusCode::kUnset;
  std::string status_message;
};

// W3C trace context: the trace this run's root span joins (api/trace_context.h).
using api::parse_traceparent;
using api::TraceParent;

// Random ids in lower-case hex (never all zeros).
std::string random_hex_id(std::size_t bytes);

// What the root span says about the run.
struct RunIdentity {
  std::string agent_name;
  std::string agent_namespace;
  std::string run_name;
  std::string provider;  // gen_ai.provider.name: "openai", "anthropic"
  std::string request_model;
};

// A Transcript that forwards every event to `inner` and turns the loop's
// events into spans. Thread-safe: take_finished() runs on the exporter's
// thread.
class SpanRecorder final : public Transcript {
 public:
  // `gen_ai_latest`: OTEL_SEMCONV_STABILITY_OPT_IN names gen_ai_latest_experimental
  // (chat spans then also carry the cache token counts).
  SpanRecorder(Transcript& inner, const Clock& clock, RunIdentity identity, TimePoint started,
               const std::optional<TraceParent>& parent, bool gen_ai_latest = false);
  void emit(nlohmann::json event) override;
  // Ends the root span (and any span still open) with the run's stop reason;
  // a non-empty error_type marks it failed.
  void finish(const std::string& stop_reason, const std::string& error_type, long long input_tokens,
              long long output_tokens, TimePoint finished);
  // Spans ended since the last call, oldest first.
  std::vector<Span> take_finished();
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
  std::vector<Span> finished_;
  std::vector<Span> chats_;
  std::size_t recorded_ = 0;
  std::size_t dropped_ = 0;
};

struct Resource {
  Attributes attributes;  // service.name first
};

// An ExportTraceServiceRequest in OTLP/JSON (hex ids, integer enums, 64-bit
// integers as decimal strings).
std::string encode_otlp_traces(const Resource& resource, const std::vector<Span>& spans);

struct Batch {
  std::string body;
  std::size_t spans = 0;
};

// The spans cut into requests of at most `bytes_max` encoded bytes each
// (a span alone larger than that is dropped and counted in *dropped).
std::vector<Batch> encode_otlp_batches(const Resource& resource, const std::vector<Span>& spans,
                                       std::size_t bytes_max, std::size_t* dropped);

// The GenAI client metrics of one run's chat spans as an OTLP/JSON
// ExportMetricsServiceRequest, with gen_ai.operation.name,
// gen_ai.provider.name, gen_ai.request.model, gen_ai.response.model and, on a
// failed call, error.type; the conventions' bucket bounds; delta
// temporality from `start` to `end` (a runner lives one heartbeat). By
// default the v1.36 histograms gen_ai.client.token.usage ({token};
// gen_ai.token.type input, output) and gen_ai.client.operation.duration (s);
// with `gen_ai_latest` their successors instead: the histograms
// gen_ai.client.inference.duration and
// gen_ai.client.inference.operation.{input,output}_tokens, and the counters
// gen_ai.client.inference.usage.{input,output}_tokens and
// gen_ai.client.inference.usage.{cache_read,cache_write}.input_tokens
// (gen_ai.token.modality text; unknown for a call that reported no usage).
std::string encode_otlp_metrics(const Resource& resource, const std::vector<Span>& chats,
                                TimePoint start, TimePoint end, bool gen_ai_latest = false);

}  // namespace hb::runner::otel
