#include "runner/otel_metrics.h"

#include <algorithm>
#include <initializer_list>
#include <optional>

#include "otlp/encode.h"

namespace hb::runner::otel {
namespace {

using nlohmann::json;
using otlp::attributes_json;
using otlp::unix_nanos;

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
  return otlp::encode_metrics(resource, kScopeName, std::move(metrics));
}

}  // namespace hb::runner::otel
