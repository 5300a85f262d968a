#include "runner/otel_exporter.h"

#include <cctype>

#include "api/trace_context.h"

namespace hb::runner::otel {
namespace {

constexpr const char* kTracesPath = "/v1/traces";
constexpr const char* kMetricsPath = "/v1/metrics";

std::string trim(const std::string& text) {
  std::size_t begin = 0;
  std::size_t end = text.size();
  while (begin < end && std::isspace(static_cast<unsigned char>(text[begin]))) ++begin;
  while (end > begin && std::isspace(static_cast<unsigned char>(text[end - 1]))) --end;
  return text.substr(begin, end - begin);
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string percent_decode(const std::string& text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size()) {
      int high = hex_value(text[i + 1]);
      int low = hex_value(text[i + 2]);
      if (high >= 0 && low >= 0) {
        out += static_cast<char>(high * 16 + low);
        i += 2;
        continue;
      }
    }
    out += text[i];
  }
  return out;
}

bool header_safe(const std::string& text) {
  for (char c : text) {
    if (c == '\r' || c == '\n' || c == '\0') return false;
  }
  return true;
}

std::string env_or_empty(const EnvLookup& env, const char* name) {
  return trim(env(name).value_or(""));
}

}  // namespace

std::vector<std::pair<std::string, std::string>> parse_key_values(const std::string& text) {
  std::vector<std::pair<std::string, std::string>> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t comma = text.find(',', start);
    if (comma == std::string::npos) comma = text.size();
    const std::string entry = text.substr(start, comma - start);
    const std::size_t equals = entry.find('=');
    if (equals != std::string::npos) {
      std::string key = trim(percent_decode(entry.substr(0, equals)));
      std::string value = trim(percent_decode(entry.substr(equals + 1)));
      if (!key.empty() && header_safe(key) && header_safe(value)) {
        out.emplace_back(std::move(key), std::move(value));
      }
    }
    start = comma + 1;
  }
  return out;
}

std::optional<ExporterConfig> config_from_env(const EnvLookup& env) {
  std::string disabled = env_or_empty(env, "OTEL_SDK_DISABLED");
  for (auto& c : disabled) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (disabled == "true") return std::nullopt;
  ExporterConfig config;
  std::string base = env_or_empty(env, "OTEL_EXPORTER_OTLP_ENDPOINT");
  while (!base.empty() && base.back() == '/') base.pop_back();
  config.traces_url = env_or_empty(env, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT");
  if (config.traces_url.empty()) {
    if (base.empty()) return std::nullopt;
    config.traces_url = base + kTracesPath;
  }
  config.metrics_url = env_or_empty(env, "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT");
  if (config.metrics_url.empty() && !base.empty()) config.metrics_url = base + kMetricsPath;
  if (env_or_empty(env, "OTEL_METRICS_EXPORTER") == "none") config.metrics_url.clear();
  config.headers = parse_key_values(env_or_empty(env, "OTEL_EXPORTER_OTLP_HEADERS"));
  for (auto& header : parse_key_values(env_or_empty(env, "OTEL_EXPORTER_OTLP_TRACES_HEADERS"))) {
    config.headers.push_back(std::move(header));
  }
  std::string service = env_or_empty(env, "OTEL_SERVICE_NAME");
  for (auto& [key, value] : parse_key_values(env_or_empty(env, "OTEL_RESOURCE_ATTRIBUTES"))) {
    if (key == "service.name" && service.empty()) service = value;
    if (key != "service.name") config.resource_attributes.emplace_back(key, value);
  }
  if (!service.empty()) config.service_name = service;
  config.gen_ai_latest = api::gen_ai_latest_experimental(env(api::kEnvSemconvOptIn).value_or(""));
  return config;
}

Resource make_resource(const ExporterConfig& config, const RunIdentity& identity) {
  Resource resource;
  resource.attributes = {{"service.name", config.service_name},
                         {"k8s.namespace.name", identity.agent_namespace},
                         {"heartbeat.agent.name", identity.agent_name},
                         {"heartbeat.run.name", identity.run_name}};
  for (const auto& attribute : config.resource_attributes) {
    resource.attributes.push_back(attribute);
  }
  return resource;
}

TraceExporter::TraceExporter(ExporterConfig config, SpanRecorder& recorder, http::Client& http,
                             std::function<void(const std::string&)> log_warning)
    : config_(std::move(config)),
      recorder_(recorder),
      http_(http),
      log_warning_(std::move(log_warning)),
      resource_(make_resource(config_, recorder.identity())) {
  thread_ = std::thread([this] { run(); });
}

TraceExporter::~TraceExporter() {
  shutdown();
}

void TraceExporter::shutdown() {
  if (!thread_.joinable()) return;
  {
    std::unique_lock lock(mutex_);
    stopping_ = true;
    wake_.notify_all();
    if (!wake_.wait_for(lock, config_.export_timeout, [this] { return done_; })) {
      cancel_->cancel();  // the request in flight ends now
    }
  }
  thread_.join();
  const std::size_t lost = lost_ + recorder_.dropped();
  if (lost > 0 && log_warning_) {
    log_warning_("trace export: " + std::to_string(lost) + " spans of this run were not exported");
  }
}

void TraceExporter::run() {
  for (bool last = false; !last;) {
    {
      std::unique_lock lock(mutex_);
      wake_.wait_for(lock, config_.export_interval, [this] { return stopping_; });
      last = stopping_;
    }
    export_pending();
    if (last) export_metrics();
  }
  std::lock_guard lock(mutex_);
  done_ = true;
  wake_.notify_all();
}

void TraceExporter::export_pending() {
  std::vector<Span> spans = recorder_.take_finished();
  if (spans.empty()) return;
  std::size_t too_large = 0;
  for (const auto& batch : encode_otlp_batches(resource_, spans, kExportBytesMax, &too_large)) {
    post(config_.traces_url, batch.body, batch.spans);
  }
  lost_ += too_large;
}

void TraceExporter::export_metrics() {
  if (config_.metrics_url.empty()) return;
  std::vector<Span> chats = recorder_.chat_spans();
  if (chats.empty()) return;
  auto [start, end] = recorder_.window();
  post(config_.metrics_url,
       encode_otlp_metrics(resource_, chats, start, end, config_.gen_ai_latest), 0);
}

void TraceExporter::post(const std::string& url, const std::string& body, std::size_t spans) {
  if (cancel_->cancelled()) {
    lost_ += spans;
    return;
  }
  http::Request request;
  request.method = "POST";
  request.url = url;
  request.headers.emplace_back("Content-Type", "application/json");
  for (const auto& header : config_.headers) request.headers.push_back(header);
  request.body = body;
  request.timeout = config_.export_timeout;
  request.cancel = cancel_;
  request.body_bytes_max = kExportReplyBytesMax;
  try {
    http::Response response = http_.send(request);
    if (response.status < 200 || response.status > 299) {
      failed(url, "HTTP " + std::to_string(response.status), spans);
    }
  } catch (const std::exception& error) {
    failed(url, error.what(), spans);
  }
}

void TraceExporter::failed(const std::string& url, const std::string& why, std::size_t spans) {
  lost_ += spans;
  if (warned_ || !log_warning_) return;
  warned_ = true;
  log_warning_("OTLP export to " + url + " failed (" + why +
               "); what it carried is dropped and later failures are not logged");
}

}  // namespace hb::runner::otel
