#include "otlp/exporter_config.h"

#include <algorithm>
#include <cctype>

#include "api/trace_context.h"

namespace hb::otlp {
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

bool disabled(const EnvLookup& env) {
  std::string value = env_or_empty(env, "OTEL_SDK_DISABLED");
  for (auto& c : value) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return value == "true";
}

// Digits enough for any timeout up to kExportTimeoutMax and far past it;
// more are not converted.
constexpr std::size_t kTimeoutDigitsMax = 9;

// A timeout variable (whole milliseconds): nullopt when unset or invalid,
// a warning for each problem.
std::optional<std::chrono::milliseconds> timeout_from(const EnvLookup& env, const char* name,
                                                      std::vector<std::string>& warnings) {
  const std::string text = env_or_empty(env, name);
  if (text.empty()) return std::nullopt;
  const bool digits =
      std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
  const std::string significant = text.substr(std::min(text.find_first_not_of('0'), text.size()));
  if (!digits || significant.empty()) {
    warnings.push_back(std::string(name) +
                       " is not a positive whole number of milliseconds; ignored (the "
                       "default is " +
                       std::to_string(kExportTimeout.count()) + " ms)");
    return std::nullopt;
  }
  // Past kTimeoutDigitsMax digits it is past the bound, whatever it says.
  const std::chrono::milliseconds timeout{significant.size() > kTimeoutDigitsMax
                                              ? kExportTimeoutMax.count() + 1
                                              : std::stoll(significant)};
  if (timeout > kExportTimeoutMax) {
    warnings.push_back(std::string(name) + " is above the most this exporter waits; using " +
                       std::to_string(kExportTimeoutMax.count()) + " ms");
    return kExportTimeoutMax;
  }
  return timeout;
}

// The traces' and the metrics' own variables, else the general one, else the default.
void read_timeouts(const EnvLookup& env, ExporterConfig& config) {
  const auto general = timeout_from(env, "OTEL_EXPORTER_OTLP_TIMEOUT", config.warnings);
  const auto traces = timeout_from(env, "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", config.warnings);
  config.export_timeout = traces.value_or(general.value_or(kExportTimeout));
  if (config.metrics_url.empty()) return;
  const auto metrics = timeout_from(env, "OTEL_EXPORTER_OTLP_METRICS_TIMEOUT", config.warnings);
  config.metrics_export_timeout = metrics.value_or(general.value_or(kExportTimeout));
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

std::optional<ExporterConfig> config_from_env(const EnvLookup& env,
                                              const std::string& default_service_name) {
  if (disabled(env)) return std::nullopt;
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
  config.service_name = service.empty() ? default_service_name : service;
  config.gen_ai_latest = api::gen_ai_latest_experimental(env(api::kEnvSemconvOptIn).value_or(""));
  read_timeouts(env, config);
  return config;
}

Resource make_resource(const ExporterConfig& config, const Attributes& own) {
  Resource resource;
  resource.attributes = {{"service.name", config.service_name}};
  for (const auto& attribute : own) resource.attributes.push_back(attribute);
  for (const auto& attribute : config.resource_attributes) {
    resource.attributes.push_back(attribute);
  }
  return resource;
}

}  // namespace hb::otlp
