#include "runner/otel_trace.h"

#include <algorithm>
#include <initializer_list>
#include <optional>

#include "api/utf8.h"

namespace hb::runner::otel {
namespace {

using nlohmann::json;

using otlp::kSpanIdBytes;
using otlp::kTraceIdBytes;
using otlp::random_hex_id;

std::string bounded(const std::string& text) {
  return api::truncate_utf8(api::sanitize_utf8(text), kAttributeValueBytesMax);
}

std::string string_field(const json& event, const char* key) {
  auto it = event.find(key);
  return it != event.end() && it->is_string() ? it->get<std::string>() : std::string();
}

long long number_field(const json& object, const char* key) {
  auto it = object.find(key);
  return it != object.end() && it->is_number_integer() ? it->get<long long>() : 0;
}

void set_error(Span& span, const std::string& type) {
  span.status = StatusCode::kError;
  span.status_message = bounded(type);
  span.attributes.emplace_back("error.type", bounded(type));
}

}  // namespace

SpanRecorder::SpanRecorder(Transcript& inner, const Clock& clock, RunIdentity identity,
                           TimePoint started, const std::optional<TraceParent>& parent,
                           SpanSink sink, bool gen_ai_latest)
    : inner_(inner),
      clock_(clock),
      identity_(std::move(identity)),
      trace_id_(parent ? parent->trace_id : random_hex_id(kTraceIdBytes)),
      gen_ai_latest_(gen_ai_latest),
      sink_(std::move(sink)) {
  root_.trace_id = trace_id_;
  root_.span_id = random_hex_id(kSpanIdBytes);
  if (parent) root_.parent_span_id = parent->parent_span_id;
  root_.name = "invoke_agent " + bounded(identity_.agent_name);
  root_.kind = SpanKind::kInternal;
  root_.start = started;
  root_.attributes = {{"gen_ai.operation.name", std::string("invoke_agent")},
                      {"gen_ai.provider.name", identity_.provider},
                      {"gen_ai.agent.name", bounded(identity_.agent_name)},
                      {"gen_ai.conversation.id", bounded(identity_.run_name)},
                      {"gen_ai.request.model", bounded(identity_.request_model)}};
  recorded_ = 1;
}

void SpanRecorder::emit(json event) {
  observe(event, clock_.now());
  inner_.emit(std::move(event));
}

void SpanRecorder::observe(const json& event, TimePoint now) {
  const std::string name = string_field(event, "event");
  std::lock_guard lock(mutex_);
  if (root_done_) return;
  if (name == "model_request") {
    open_chat(now);
  } else if (name == "model_reply") {
    close_chat(event, now);
  } else if (name == "tool_call") {
    open_tool(event, now);
  } else if (name == "tool_result") {
    close_tool(event, now);
  } else if (name == "stop") {
    const std::string reason = string_field(event, "stopReason");
    end_open(chat_, now, reason);
    end_open(tool_, now, reason);
  }
}

Span SpanRecorder::child(std::string name, SpanKind kind, TimePoint now) const {
  Span span;
  span.trace_id = trace_id_;
  span.span_id = random_hex_id(kSpanIdBytes);
  span.parent_span_id = root_.span_id;
  span.name = std::move(name);
  span.kind = kind;
  span.start = now;
  span.end = now;
  return span;
}

void SpanRecorder::open_chat(TimePoint now) {
  end_open(chat_, now, "no_reply");
  Span span = child("chat " + bounded(identity_.request_model), SpanKind::kClient, now);
  span.attributes = {{"gen_ai.operation.name", std::string("chat")},
                     {"gen_ai.provider.name", identity_.provider},
                     {"gen_ai.request.model", bounded(identity_.request_model)},
                     {"gen_ai.conversation.id", bounded(identity_.run_name)}};
  chat_ = std::move(span);
}

void SpanRecorder::close_chat(const json& reply, TimePoint now) {
  if (!chat_) return;
  Span span = std::move(*chat_);
  chat_.reset();
  span.end = now;
  const std::string model = string_field(reply, "model");
  if (!model.empty()) span.attributes.emplace_back("gen_ai.response.model", bounded(model));
  auto usage = reply.find("usage");
  if (usage != reply.end() && usage->is_object()) {
    span.attributes.emplace_back("gen_ai.usage.input_tokens", number_field(*usage, "inputTokens"));
    span.attributes.emplace_back("gen_ai.usage.output_tokens",
                                 number_field(*usage, "outputTokens"));
    // Attributes of the latest experimental conventions only.
    for (const auto& [key, name] :
         {std::pair{"cacheReadInputTokens", "gen_ai.usage.cache_read.input_tokens"},
          std::pair{"cacheWriteInputTokens", "gen_ai.usage.cache_write.input_tokens"}}) {
      const long long tokens = number_field(*usage, key);
      if (gen_ai_latest_ && tokens > 0) span.attributes.emplace_back(name, tokens);
    }
  }
  keep(std::move(span));
}

void SpanRecorder::open_tool(const json& call, TimePoint now) {
  end_open(tool_, now, "no_result");
  const std::string tool = bounded(string_field(call, "name"));
  Span span = child("execute_tool " + tool, SpanKind::kInternal, now);
  span.attributes = {{"gen_ai.operation.name", std::string("execute_tool")},
                     {"gen_ai.tool.name", tool},
                     {"gen_ai.tool.call.id", bounded(string_field(call, "id"))},
                     {"gen_ai.tool.type", std::string("function")}};
  tool_ = std::move(span);
}

void SpanRecorder::close_tool(const json& result, TimePoint now) {
  if (!tool_) return;
  Span span = std::move(*tool_);
  tool_.reset();
  span.end = now;
  auto is_error = result.find("isError");
  if (is_error != result.end() && is_error->is_boolean() && is_error->get<bool>()) {
    set_error(span, "tool_error");
  }
  keep(std::move(span));
}

void SpanRecorder::end_open(std::optional<Span>& span, TimePoint now, const std::string& why) {
  if (!span) return;
  span->end = now;
  set_error(*span, why.empty() ? std::string("interrupted") : why);
  keep(std::move(*span));
  span.reset();
}

void SpanRecorder::keep(Span span) {
  if (recorded_ >= kSpansPerRunMax) {
    ++dropped_;
    return;
  }
  ++recorded_;
  if (span.kind == SpanKind::kClient) chats_.push_back(span);
  sink_(std::move(span));
}

void SpanRecorder::finish(const std::string& stop_reason, const std::string& error_type,
                          long long input_tokens, long long output_tokens, TimePoint finished) {
  std::lock_guard lock(mutex_);
  if (root_done_) return;
  end_open(chat_, finished, stop_reason);
  end_open(tool_, finished, stop_reason);
  root_.end = finished;
  root_.attributes.emplace_back("gen_ai.usage.input_tokens", input_tokens);
  root_.attributes.emplace_back("gen_ai.usage.output_tokens", output_tokens);
  root_.attributes.emplace_back("heartbeat.stop_reason", bounded(stop_reason));
  if (!error_type.empty()) set_error(root_, error_type);
  root_done_ = true;
  sink_(root_);  // the root is always kept (counted in recorded_ already)
}

std::vector<Span> SpanRecorder::chat_spans() const {
  std::lock_guard lock(mutex_);
  return chats_;
}

std::pair<TimePoint, TimePoint> SpanRecorder::window() const {
  std::lock_guard lock(mutex_);
  return {root_.start, root_.end};
}

std::string SpanRecorder::chat_traceparent() const {
  std::lock_guard lock(mutex_);
  if (!chat_) return {};
  return api::format_traceparent(trace_id_, chat_->span_id);
}

std::size_t SpanRecorder::dropped() const {
  std::lock_guard lock(mutex_);
  return dropped_;
}

Resource run_resource(otlp::ExporterConfig config, const RunIdentity& identity) {
  if (config.service_name.empty()) config.service_name = kServiceNameDefault;
  return otlp::make_resource(config, {{"k8s.namespace.name", identity.agent_namespace},
                                      {"heartbeat.agent.name", identity.agent_name},
                                      {"heartbeat.run.name", identity.run_name}});
}

}  // namespace hb::runner::otel
