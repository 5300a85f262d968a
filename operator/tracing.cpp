#include "operator/tracing.h"

#include <spdlog/spdlog.h>

#include <string_view>
#include <utility>

namespace hb::operator_ {

std::optional<otlp::ExporterConfig> operator_trace_config(const std::string& endpoint,
                                                          const otlp::EnvLookup& env) {
  std::optional<otlp::ExporterConfig> config = otlp::config_from_env(
      [&](const char* name) -> std::optional<std::string> {
        if (!endpoint.empty() && std::string_view(name) == "OTEL_EXPORTER_OTLP_ENDPOINT") {
          return endpoint;
        }
        return env(name);
      },
      kOperatorServiceName);
  if (config) config->metrics_url.clear();
  return config;
}

OperatorTracing::OperatorTracing(otlp::ExporterConfig config, const std::string& own_namespace)
    : http_(http::make_client({})) {
  otlp::Attributes own;
  if (!own_namespace.empty()) own.emplace_back("k8s.namespace.name", own_namespace);
  const std::string url = config.traces_url;
  otlp::Resource resource = otlp::make_resource(config, own);
  exporter_ = std::make_unique<otlp::Exporter>(
      std::move(config), std::move(resource), kOperatorScopeName, *http_,
      [](const std::string& message) {
        spdlog::warn("event=otlp_export_failed error=\"{}\"", message);
      });
  spdlog::info("event=tracing_on traces_url=\"{}\"", url);
}

OperatorTracing::~OperatorTracing() {
  exporter_->shutdown();
}

void OperatorTracing::export_metrics(controllers::Metrics& metrics) const {
  const otlp::ExporterStats stats = exporter_->stats();
  metrics.gauge_set("heartbeat_otlp_spans_exported_total", {}, static_cast<double>(stats.exported));
  for (const auto& [reason, count] :
       {std::pair{"queue_full", stats.queue_full}, std::pair{"export_failed", stats.failed},
        std::pair{"too_large", stats.too_large}}) {
    metrics.gauge_set("heartbeat_otlp_spans_dropped_total", {{"reason", reason}},
                      static_cast<double>(count));
  }
}

}  // namespace hb::operator_
