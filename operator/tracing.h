// The operator's own OpenTelemetry export: one span per heartbeat it starts
// (controllers/pod/scheduling_span.h), sent by an otlp::Exporter on a thread of
// its own, so a reconcile worker only ever queues a span. On when
// --otel-endpoint or the standard OTEL_EXPORTER_OTLP_* variables name an
// endpoint (and OTEL_SDK_DISABLED is not true); the exporter's counts are
// the heartbeat_otlp_spans_* metrics.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "controllers/runtime/metrics.h"
#include "http/http.h"
#include "otlp/exporter.h"
#include "otlp/exporter_config.h"

namespace hb::operator_ {

inline constexpr const char* kOperatorServiceName = "heartbeat-operator";
inline constexpr const char* kOperatorScopeName = "heartbeat-operator";

// The exporter's settings: the OTEL_* variables `env` returns, with
// `endpoint` (--otel-endpoint) in place of OTEL_EXPORTER_OTLP_ENDPOINT when
// set. Spans only: the operator's metrics are its Prometheus endpoint.
std::optional<otlp::ExporterConfig> operator_trace_config(const std::string& endpoint,
                                                          const otlp::EnvLookup& env);

class OperatorTracing {
 public:
  // `own_namespace` becomes the resource's k8s.namespace.name when known.
  OperatorTracing(otlp::ExporterConfig config, const std::string& own_namespace);
  ~OperatorTracing();
  // Never blocks (otlp::Exporter::offer).
  void offer(otlp::Span span) { exporter_->offer(std::move(span)); }
  // heartbeat_otlp_spans_exported_total and heartbeat_otlp_spans_dropped_total{reason}.
  void export_metrics(controllers::Metrics& metrics) const;
  void shutdown() { exporter_->shutdown(); }

 private:
  std::unique_ptr<http::Client> http_;
  std::unique_ptr<otlp::Exporter> exporter_;
};

}  // namespace hb::operator_
