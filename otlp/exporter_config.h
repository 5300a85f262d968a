// An OTLP/HTTP exporter's settings from the standard OTEL_* variables
// (the OpenTelemetry SDK environment specification), read the same way by
// the operator and the runner. Pure: the environment is passed in.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "otlp/span.h"

namespace hb::otlp {

// One export request, connect to last byte of the reply; also all
// Exporter::shutdown() waits. Shorter than the specification's 10 s when
// unset: the runner's exit waits on the last export, and a heartbeat should
// not end 10 s late because a collector hangs.
inline constexpr std::chrono::milliseconds kExportTimeout{2000};
// OTEL_EXPORTER_OTLP_TIMEOUT and OTEL_EXPORTER_OTLP_{TRACES,METRICS}_TIMEOUT
// (whole milliseconds) are clamped to this: a heartbeat's end and the
// operator's shutdown wait up to one export timeout, never longer.
inline constexpr std::chrono::milliseconds kExportTimeoutMax{30000};
// Between two exports of the spans queued so far (OTEL_BSP_SCHEDULE_DELAY's default).
inline constexpr std::chrono::milliseconds kExportInterval{5000};
// Spans waiting for export at most (OTEL_BSP_MAX_QUEUE_SIZE's default);
// more are dropped and counted.
inline constexpr std::size_t kQueueSpansMaxDefault = 2048;

struct ExporterConfig {
  std::string traces_url;   // ".../v1/traces"
  std::string metrics_url;  // ".../v1/metrics"; empty: no metrics
  // OTEL_EXPORTER_OTLP_HEADERS: sent, never logged.
  std::vector<std::pair<std::string, std::string>> headers;
  std::string service_name;        // OTEL_SERVICE_NAME, else the caller's default
  Attributes resource_attributes;  // OTEL_RESOURCE_ATTRIBUTES
  std::chrono::milliseconds export_timeout = kExportTimeout;          // traces
  std::chrono::milliseconds metrics_export_timeout = kExportTimeout;  // metrics
  std::chrono::milliseconds export_interval = kExportInterval;
  std::size_t queue_spans_max = kQueueSpansMaxDefault;
  // OTEL_SEMCONV_STABILITY_OPT_IN names gen_ai_latest_experimental.
  bool gen_ai_latest = false;
  // What the variables got wrong, for the caller to log: names the
  // variable, never its value.
  std::vector<std::string> warnings;
};

// Looks a variable up; nullopt when unset.
using EnvLookup = std::function<std::optional<std::string>(const char* name)>;

// The configuration, or nullopt (export off) when OTEL_SDK_DISABLED=true or
// no endpoint is set. OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is used as is;
// OTEL_EXPORTER_OTLP_ENDPOINT gets "/v1/traces" appended. Metrics go to
// OTEL_EXPORTER_OTLP_METRICS_ENDPOINT, else OTEL_EXPORTER_OTLP_ENDPOINT +
// "/v1/metrics" (none with only a traces endpoint), unless
// OTEL_METRICS_EXPORTER=none. OTEL_SEMCONV_STABILITY_OPT_IN picks the
// GenAI conventions' version (api/trace_context.h). The export timeouts are
// OTEL_EXPORTER_OTLP_{TRACES,METRICS}_TIMEOUT, else OTEL_EXPORTER_OTLP_TIMEOUT,
// else kExportTimeout; a value that is not a positive whole number of
// milliseconds is a warning and the default, one above kExportTimeoutMax a
// warning and that bound.
std::optional<ExporterConfig> config_from_env(const EnvLookup& env,
                                              const std::string& default_service_name);

// "k1=v1,k2=v2" (values percent-decoded, blanks trimmed); malformed entries skipped.
std::vector<std::pair<std::string, std::string>> parse_key_values(const std::string& text);

// service.name, then `own` (what the sender knows of itself), then
// OTEL_RESOURCE_ATTRIBUTES.
Resource make_resource(const ExporterConfig& config, const Attributes& own);

}  // namespace hb::otlp
