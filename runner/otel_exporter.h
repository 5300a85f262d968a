// Sends a SpanRecorder's spans over OTLP/HTTP (JSON) from a thread of its
// own: every kExportInterval, and once more at shutdown(), with the run's
// GenAI client metrics (encode_otlp_metrics) then, which never waits
// longer than the export timeout (the request in flight is then cancelled).
// A failed export is dropped, the first failure logged, and the number of
// spans lost logged once at shutdown: export never fails or holds a heartbeat.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "kube/http.h"
#include "runner/otel_trace.h"

namespace hb::runner::otel {

// One export request, connect to reply; also all shutdown() may wait.
inline constexpr std::chrono::milliseconds kExportTimeout{2000};
// Between two exports of the spans ended so far.
inline constexpr std::chrono::milliseconds kExportInterval{5000};
// One request's body at most; more spans go in more requests.
inline constexpr std::size_t kExportBytesMax = 512 * 1024;
// A collector's reply is read up to this much, then the request fails.
inline constexpr std::size_t kExportReplyBytesMax = 64 * 1024;
inline constexpr const char* kServiceNameDefault = "heartbeat-runner";

struct ExporterConfig {
  std::string traces_url;   // ".../v1/traces"
  std::string metrics_url;  // ".../v1/metrics"; empty: no metrics
  // OTEL_EXPORTER_OTLP_HEADERS: sent, never logged.
  std::vector<std::pair<std::string, std::string>> headers;
  std::string service_name = kServiceNameDefault;
  Attributes resource_attributes;  // OTEL_RESOURCE_ATTRIBUTES
  std::chrono::milliseconds export_timeout = kExportTimeout;
  std::chrono::milliseconds export_interval = kExportInterval;
  // OTEL_SEMCONV_STABILITY_OPT_IN names gen_ai_latest_experimental.
  bool gen_ai_latest = false;
};

// Looks a variable up; nullopt when unset.
using EnvLookup = std::function<std::optional<std::string>(const char* name)>;

// The exporter's configuration from the standard OTEL_* variables, or
// nullopt (tracing off) when OTEL_SDK_DISABLED=true or no endpoint is set.
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is used as is;
// OTEL_EXPORTER_OTLP_ENDPOINT gets "/v1/traces" appended. Metrics go to
// OTEL_EXPORTER_OTLP_METRICS_ENDPOINT, else OTEL_EXPORTER_OTLP_ENDPOINT +
// "/v1/metrics" (none with only a traces endpoint), unless
// OTEL_METRICS_EXPORTER=none. OTEL_SEMCONV_STABILITY_OPT_IN picks the
// GenAI conventions' version (api/trace_context.h).
std::optional<ExporterConfig> config_from_env(const EnvLookup& env);

// "k1=v1,k2=v2" (values percent-decoded, blanks trimmed); malformed entries skipped.
std::vector<std::pair<std::string, std::string>> parse_key_values(const std::string& text);

// service.name, the run's namespace and names, then OTEL_RESOURCE_ATTRIBUTES.
Resource make_resource(const ExporterConfig& config, const RunIdentity& identity);

class TraceExporter {
 public:
  TraceExporter(ExporterConfig config, SpanRecorder& recorder, http::Client& http,
                std::function<void(const std::string&)> log_warning);
  ~TraceExporter();
  TraceExporter(const TraceExporter&) = delete;
  TraceExporter& operator=(const TraceExporter&) = delete;
  // Exports what is left, waiting at most the export timeout. Idempotent.
  void shutdown();

 private:
  void run();
  void export_pending();
  void export_metrics();
  void post(const std::string& url, const std::string& body, std::size_t spans);
  void failed(const std::string& url, const std::string& why, std::size_t spans);

  ExporterConfig config_;
  SpanRecorder& recorder_;
  http::Client& http_;
  std::function<void(const std::string&)> log_warning_;
  Resource resource_;
  std::shared_ptr<http::CancelSource> cancel_ = std::make_shared<http::CancelSource>();
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  bool done_ = false;
  bool warned_ = false;
  std::size_t lost_ = 0;  // only the exporter thread writes it before done_
  std::thread thread_;
};

}  // namespace hb::runner::otel
