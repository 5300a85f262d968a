#include "otlp/encode.h"

namespace hb::otlp {
namespace {

using nlohmann::json;

std::string dump(const json& value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
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

json resource_json(const Resource& resource) {
  return {{"attributes", attributes_json(resource.attributes)}};
}

}  // namespace

json attributes_json(const Attributes& attributes) {
  json out = json::array();
  for (const auto& attribute : attributes) out.push_back(attribute_json(attribute));
  return out;
}

long long unix_nanos(TimePoint time) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(time.time_since_epoch()).count();
}

std::string encode_traces(const Resource& resource, const std::string& scope,
                          const std::vector<Span>& spans) {
  json span_array = json::array();
  for (const auto& span : spans) span_array.push_back(span_json(span));
  json scope_spans = {{"scope", {{"name", scope}}}, {"spans", std::move(span_array)}};
  json resource_spans = {{"resource", resource_json(resource)},
                         {"scopeSpans", json::array({std::move(scope_spans)})}};
  return dump({{"resourceSpans", json::array({std::move(resource_spans)})}});
}

std::vector<Batch> encode_batches(const Resource& resource, const std::string& scope,
                                  const std::vector<Span>& spans, std::size_t bytes_max,
                                  std::size_t* dropped) {
  const std::size_t envelope = encode_traces(resource, scope, {}).size();
  std::vector<Batch> out;
  std::vector<Span> batch;
  std::size_t batch_bytes = envelope;
  for (const auto& span : spans) {
    // The span's own text plus the comma before it.
    const std::size_t bytes = dump(span_json(span)).size() + 1;
    if (envelope + bytes > bytes_max) {
      if (dropped) ++*dropped;
      continue;
    }
    if (batch_bytes + bytes > bytes_max) {
      out.push_back({encode_traces(resource, scope, batch), batch.size()});
      batch.clear();
      batch_bytes = envelope;
    }
    batch.push_back(span);
    batch_bytes += bytes;
  }
  if (!batch.empty()) out.push_back({encode_traces(resource, scope, batch), batch.size()});
  return out;
}

std::string encode_metrics(const Resource& resource, const std::string& scope, json metrics) {
  json scope_metrics = {{"scope", {{"name", scope}}}, {"metrics", std::move(metrics)}};
  json resource_metrics = {{"resource", resource_json(resource)},
                           {"scopeMetrics", json::array({std::move(scope_metrics)})}};
  return dump({{"resourceMetrics", json::array({std::move(resource_metrics)})}});
}

}  // namespace hb::otlp
