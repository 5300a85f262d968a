#include "runner/otel_trace.h"

#include <algorithm>
#include <initializer_list>
#include <optional>
#include <random>

#include "api/utf8.h"

namespace hb::runner::otel {
namespace {

using nlohmann::json;

constexpr std::size_t kTraceIdBytes = 16;
constexpr std::size_t kSpanIdBytes = 8;
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

long long unix_nanos(TimePoint time) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(time.time_since_epoch()).count();
}

json attribute_json(const std::pair<std::string, AttributeValue>& attribute) {
  json value;
  if (const auto* text = std::get_if<std::string>(&attribute.second)) {
    value = {{"stringValue", *text}};
  } else {
    value = {{"intValue", std::to_string(std::get<long long>(attribute.second))}};
  }
  return {{"key", attribute.first}, {"value", std::move(value)}};
}

json attributes_json(const Attributes& attributes) {
  json out = json::array();
  for (const auto& attribute : attributes) out.push_back(attribute_json(attribute));
  return out;
}

json span_json(const Span& span) {
  json out = {{"traceId", span.trace_id},
              {"spanId", span.span_id},
              {"name", span.name},
              {"kind", static_cast<int>(span.kind)},
              {"startTimeUnixNano", std::to_string(unix_nanos(span.start))},
              {"endTimeUnixNano", std::to_string(unix_nanos(span.end))},
              {"attributes", attributes_json(span.attributes)}};
  if (!span.parent_span_id.empty()) out["parentSpanId"] = span.parent_span_id;
  json status = {{"code", static_cast<int>(span.status)}};
  if (!span.status_message.empty()) status["message"] = span.status_message;
  out["status"] = std::move(status);
  return out;
}

void set_error(Span& span, const std::string& type) {
  span.status = StatusCode::kError;
  span.status_message = bounded(type);
  span.attributes.emplace_back("error.type", bounded(type));
}

}  // namespace

std::string random_hex_id(std::size_t bytes) {
  thread_local std::mt19937_64 engine{std::random_device{}()};
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  do {
    out.clear();
    for (std::size_t i = 0; i < bytes; ++i) {
      auto byte = static_cast<unsigned>(engine() & 0xffU);
      out += kDigits[byte >> 4];
      out += kDigits[byte & 0xfU];
    }
  } while (out.find_first_not_of('0') == std::string::npos);
  return out;
}

SpanRecorder::SpanRecorder(Transcript& inner, const Clock& clock, RunIdentity identity,
                           TimePoint started, const std::optional<TraceParent>& parent,
                           bool gen_ai_latest)
    : inner_(inner),
      clock_(clock),
      identity_(std::move(identity)),
      trace_id_(parent ? parent->trace_id : random_hex_id(kTraceIdBytes)),
      gen_ai_latest_(gen_ai_latest) {
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
  finished_.push_back(std::move(span));
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
  finished_.push_back(root_);  // the root is always kept (counted in recorded_ already)
}

std::vector<Span> SpanRecorder::take_finished() {
  std::lock_guard lock(mutex_);
  std::vector<Span> out;
  out.swap(finished_);
  return out;
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

std::string encode_otlp_traces(const Resource& resource, const std::vector<Span>& spans) {
  json span_array = json::array();
  for (const auto& span : spans) span_array.push_back(span_json(span));
  json scope = {{"scope", {{"name", "heartbeat-runner"}}}, {"spans", std::move(span_array)}};
  json resource_spans = {{"resource", {{"attributes", attributes_json(resource.attributes)}}},
                         {"scopeSpans", json::array({std::move(scope)})}};
  return json({{"resourceSpans", json::array({std::move(resource_spans)})}})
      .dump(-1, ' ', false, json::error_handler_t::replace);
}

std::vector<Batch> encode_otlp_batches(const Resource& resource, const std::vector<Span>& spans,
                                       std::size_t bytes_max, std::size_t* dropped) {
  const std::size_t envelope = encode_otlp_traces(resource, {}).size();
  std::vector<Batch> out;
  std::vector<Span> batch;
  std::size_t batch_bytes = envelope;
  for (const auto& span : spans) {
    // The span's own text plus the comma before it.
    const std::size_t bytes =
        span_json(span).dump(-1, ' ', false, json::error_handler_t::replace).size() + 1;
    if (envelope + bytes > bytes_max) {
      if (dropped) ++*dropped;
      continue;
    }
    if (batch_bytes + bytes > bytes_max) {
      out.push_back({encode_otlp_traces(resource, batch), batch.size()});
      batch.clear();
      batch_bytes = envelope;
    }
    batch.push_back(span);
    batch_bytes += bytes;
  }
  if (!batch.empty()) out.push_back({encode_otlp_traces(resource, batch), batch.size()});
  return out;
}

namespace {

// The conventions' advisory explicit bucket boundaries.
constexpr double kTokenBounds[] = {1,     4,     16,     64,      256,     1024,     4096,
                                   16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864};
constexpr double kSecondsBounds[] = {0.01, 0.02, 0.04, 0.08,  0.16,  0.32,  0.64,
                                     1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92};
constexpr int kDeltaTemporality = 1;

const AttributeValue* find_attribute(const Span& span, const std::string& key) {
  for (const auto& [name, value] : span.attributes) {
    if (name == key) return &value;
  }
  return nullptr;
}

// One histogram data point per distinct attribute set.
struct Point {
  Attributes attributes;
  std::vector<long long> buckets;
  long long count = 0;
  double sum = 0;
  double min = 0;
  double max = 0;
};

template <std::size_t N>
void record(std::vector<Point>& points, Attributes attributes, double value,
            const double (&bounds)[N]) {
  auto it = std::find_if(points.begin(), points.end(),
                         [&](const Point& p) { return p.attributes == attributes; });
  if (it == points.end()) {
    points.push_back({std::move(attributes), std::vector<long long>(N + 1, 0), 0, 0, value, value});
    it = points.end() - 1;
  }
  std::size_t bucket = 0;
  while (bucket < N && value > bounds[bucket]) ++bucket;
  ++it->buckets[bucket];
  ++it->count;
  it->sum += value;
  it->min = std::min(it->min, value);
  it->max = std::max(it->max, value);
}

template <std::size_t N>
json histogram_json(const std::string& name, const std::string& unit,
                    const std::string& description, const std::vector<Point>& points,
                    const double (&bounds)[N], TimePoint start, TimePoint end) {
  json data_points = json::array();
  for (const auto& point : points) {
    json buckets = json::array();
    for (long long n : point.buckets) buckets.push_back(std::to_string(n));
    data_points.push_back({{"attributes", attributes_json(point.attributes)},
                           {"startTimeUnixNano", std::to_string(unix_nanos(start))},
                           {"timeUnixNano", std::to_string(unix_nanos(end))},
                           {"count", std::to_string(point.count)},
                           {"sum", point.sum},
                           {"min", point.min},
                           {"max", point.max},
                           {"bucketCounts", std::move(buckets)},
                           {"explicitBounds", json(std::vector<double>(bounds, bounds + N))}});
  }
  return {
      {"name", name},
      {"unit", unit},
      {"description", description},
      {"histogram",
       {{"dataPoints", std::move(data_points)}, {"aggregationTemporality", kDeltaTemporality}}}};
}

// A monotonic counter's data point per distinct attribute set.
struct SumPoint {
  Attributes attributes;
  long long total = 0;
};

void add(std::vector<SumPoint>& points, Attributes attributes, long long value) {
  auto it = std::find_if(points.begin(), points.end(),
                         [&](const SumPoint& p) { return p.attributes == attributes; });
  if (it == points.end()) {
    points.push_back({std::move(attributes), 0});
    it = points.end() - 1;
  }
  it->total += value;
}

json sum_json(const std::string& name, const std::string& description,
              const std::vector<SumPoint>& points, TimePoint start, TimePoint end) {
  json data_points = json::array();
  for (const auto& point : points) {
    data_points.push_back({{"attributes", attributes_json(point.attributes)},
                           {"startTimeUnixNano", std::to_string(unix_nanos(start))},
                           {"timeUnixNano", std::to_string(unix_nanos(end))},
                           {"asInt", std::to_string(point.total)}});
  }
  return {{"name", name},
          {"unit", "{token}"},
          {"description", description},
          {"sum",
           {{"dataPoints", std::move(data_points)},
            {"aggregationTemporality", kDeltaTemporality},
            {"isMonotonic", true}}}};
}

// The chat span's attributes among `keys`, in that order.
Attributes attributes_of(const Span& chat, std::initializer_list<const char*> keys) {
  Attributes out;
  for (const char* key : keys) {
    if (const AttributeValue* value = find_attribute(chat, key)) out.emplace_back(key, *value);
  }
  return out;
}

// The attributes both histograms share, taken from the chat span.
Attributes metric_attributes(const Span& chat) {
  return attributes_of(chat, {"gen_ai.operation.name", "gen_ai.provider.name",
                              "gen_ai.request.model", "gen_ai.response.model", "error.type"});
}

std::optional<long long> int_attribute(const Span& chat, const char* key) {
  const AttributeValue* value = find_attribute(chat, key);
  if (!value || !std::holds_alternative<long long>(*value)) return std::nullopt;
  return std::get<long long>(*value);
}

double seconds_of(const Span& span) {
  return std::chrono::duration<double>(span.end - span.start).count();
}

// The v1.36 conventions: gen_ai.client.token.usage and gen_ai.client.operation.duration.
json metrics_v1_36(const std::vector<Span>& chats, TimePoint start, TimePoint end) {
  std::vector<Point> tokens;
  std::vector<Point> durations;
  for (const auto& chat : chats) {
    const Attributes shared = metric_attributes(chat);
    record(durations, shared, seconds_of(chat), kSecondsBounds);
    for (const auto& [type, key] : {std::pair{"input", "gen_ai.usage.input_tokens"},
                                    std::pair{"output", "gen_ai.usage.output_tokens"}}) {
      const std::optional<long long> value = int_attribute(chat, key);
      if (!value) continue;
      Attributes attributes = shared;
      attributes.emplace_back("gen_ai.token.type", std::string(type));
      record(tokens, std::move(attributes), static_cast<double>(*value), kTokenBounds);
    }
  }
  return json::array(
      {histogram_json("gen_ai.client.token.usage", "{token}",
                      "Number of input and output tokens used", tokens, kTokenBounds, start, end),
       histogram_json("gen_ai.client.operation.duration", "s", "GenAI operation duration",
                      durations, kSecondsBounds, start, end)});
}

// The latest experimental conventions: gen_ai.client.inference.*.
json metrics_latest(const std::vector<Span>& chats, TimePoint start, TimePoint end) {
  std::vector<Point> durations, inputs, outputs;
  std::vector<SumPoint> used_in, used_out, cache_read, cache_write;
  for (const auto& chat : chats) {
    const Attributes shared = metric_attributes(chat);
    record(durations, shared, seconds_of(chat), kSecondsBounds);
    const std::optional<long long> in = int_attribute(chat, "gen_ai.usage.input_tokens");
    const std::optional<long long> out = int_attribute(chat, "gen_ai.usage.output_tokens");
    record(inputs, shared, static_cast<double>(in.value_or(0)), kTokenBounds);
    record(outputs, shared, static_cast<double>(out.value_or(0)), kTokenBounds);
    Attributes usage = attributes_of(chat, {"gen_ai.operation.name", "gen_ai.provider.name",
                                            "gen_ai.request.model", "gen_ai.response.model"});
    usage.emplace_back("gen_ai.token.modality", std::string(in || out ? "text" : "unknown"));
    add(used_in, usage, in.value_or(0));
    add(used_out, usage, out.value_or(0));
    if (auto n = int_attribute(chat, "gen_ai.usage.cache_read.input_tokens")) {
      add(cache_read, usage, *n);
    }
    if (auto n = int_attribute(chat, "gen_ai.usage.cache_write.input_tokens")) {
      add(cache_write, usage, *n);
    }
  }
  json out = json::array(
      {histogram_json("gen_ai.client.inference.duration", "s",
                      "GenAI client inference operation duration", durations, kSecondsBounds, start,
                      end),
       histogram_json("gen_ai.client.inference.operation.input_tokens", "{token}",
                      "Input tokens per inference operation", inputs, kTokenBounds, start, end),
       histogram_json("gen_ai.client.inference.operation.output_tokens", "{token}",
                      "Output tokens per inference operation", outputs, kTokenBounds, start, end),
       sum_json("gen_ai.client.inference.usage.input_tokens", "Input tokens used", used_in, start,
                end),
       sum_json("gen_ai.client.inference.usage.output_tokens", "Output tokens used", used_out,
                start, end)});
  if (!cache_read.empty()) {
    out.push_back(sum_json("gen_ai.client.inference.usage.cache_read.input_tokens",
                           "Input tokens served from a provider cache", cache_read, start, end));
  }
  if (!cache_write.empty()) {
    out.push_back(sum_json("gen_ai.client.inference.usage.cache_write.input_tokens",
                           "Input tokens written to a provider cache", cache_write, start, end));
  }
  return out;
}

}  // namespace

std::string encode_otlp_metrics(const Resource& resource, const std::vector<Span>& chats,
                                TimePoint start, TimePoint end, bool gen_ai_latest) {
  json metrics =
      gen_ai_latest ? metrics_latest(chats, start, end) : metrics_v1_36(chats, start, end);
  json scope = {{"scope", {{"name", "heartbeat-runner"}}}, {"metrics", std::move(metrics)}};
  json resource_metrics = {{"resource", {{"attributes", attributes_json(resource.attributes)}}},
                           {"scopeMetrics", json::array({std::move(scope)})}};
  return json({{"resourceMetrics", json::array({std::move(resource_metrics)})}})
      .dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace hb::runner::otel
