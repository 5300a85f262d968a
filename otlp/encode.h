// OTLP/JSON, the encoding an OpenTelemetry Collector's OTLP/HTTP receiver
// reads at /v1/traces and /v1/metrics: hex ids, integer enums, 64-bit
// integers as decimal strings. Pure.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "otlp/span.h"

namespace hb::otlp {

// An ExportTraceServiceRequest: the spans under one resource and one
// instrumentation scope.
std::string encode_traces(const Resource& resource, const std::string& scope,
                          const std::vector<Span>& spans);

struct Batch {
  std::string body;
  std::size_t spans = 0;
};

// The spans cut into requests of at most `bytes_max` encoded bytes each
// (a span alone larger than that is dropped and counted in *dropped).
std::vector<Batch> encode_batches(const Resource& resource, const std::string& scope,
                                  const std::vector<Span>& spans, std::size_t bytes_max,
                                  std::size_t* dropped);

// An ExportMetricsServiceRequest around `metrics` (an array of OTLP/JSON
// Metric objects) under one resource and scope.
std::string encode_metrics(const Resource& resource, const std::string& scope,
                           nlohmann::json metrics);

// The pieces metric encoders share: KeyValue list, and nanoseconds since
// the Unix epoch (OTLP's fixed64 times, written as decimal strings).
nlohmann::json attributes_json(const Attributes& attributes);
long long unix_nanos(TimePoint time);

}  // namespace hb::otlp
