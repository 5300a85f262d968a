#include "runner/retry_policy.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <ctime>

#include "runner/limits.h"

namespace hb::runner {
namespace {

std::string header(const std::map<std::string, std::string>& headers, const std::string& name) {
  auto it = headers.find(name);
  return it == headers.end() ? std::string() : it->second;
}

std::optional<double> parse_number(const std::string& text) {
  if (text.empty()) return std::nullopt;
  char* end = nullptr;
  double value = std::strtod(text.c_str(), &end);
  while (end && *end && std::isspace(static_cast<unsigned char>(*end))) ++end;
  if (end == text.c_str() || (end && *end) || !std::isfinite(value)) return std::nullopt;
  return value;
}

// IMF-fixdate: "Wed, 21 Oct 2015 07:28:00 GMT".
std::optional<TimePoint> parse_http_date(const std::string& text) {
  std::tm tm{};
  const char* end = strptime(text.c_str(), "%a, %d %b %Y %H:%M:%S GMT", &tm);
  if (!end || *end) return std::nullopt;
  return std::chrono::system_clock::from_time_t(timegm(&tm));
}

}  // namespace

bool is_retryable_status(int status, const std::map<std::string, std::string>& headers) {
  std::string should = header(headers, "x-should-retry");
  if (should == "true") return true;
  if (should == "false") return false;
  return status == 408 || status == 409 || status == 429 || status >= 500;
}

std::optional<Millis> parse_retry_after(const std::map<std::string, std::string>& headers,
                                        TimePoint now) {
  if (auto ms = parse_number(header(headers, "retry-after-ms")); ms && *ms >= 0) {
    return Millis(static_cast<long long>(std::ceil(std::min(*ms, 1e12))));
  }
  std::string after = header(headers, "retry-after");
  if (auto seconds = parse_number(after); seconds && *seconds >= 0) {
    return Millis(static_cast<long long>(std::ceil(std::min(*seconds, 1e9) * 1000)));
  }
  if (auto date = parse_http_date(after)) {
    auto delta = std::chrono::duration_cast<Millis>(*date - now);
    return delta.count() >= 0 ? delta : Millis(0);
  }
  return std::nullopt;
}

Millis retry_delay(int retry, std::optional<Millis> server_hint, double jitter_unit) {
  if (server_hint && server_hint->count() > 0)
    return std::min(*server_hint, Millis(kRetryAfterMax));
  double base =
      static_cast<double>(kRetryDelayInitial.count()) * std::pow(2.0, std::clamp(retry, 0, 30));
  base = std::min(base, static_cast<double>(kRetryBackoffMax.count()));
  double jitter = 1.0 - 0.25 * std::clamp(jitter_unit, 0.0, 1.0);
  return Millis(static_cast<long long>(base * jitter));
}

bool is_quota_wait(int status, std::optional<Millis> server_hint, TimePoint now,
                   TimePoint deadline) {
  constexpr int kTooManyRequests = 429;
  if (status != kTooManyRequests || !server_hint) return false;
  return *server_hint > kRetryAfterMax || now + *server_hint >= deadline;
}

}  // namespace hb::runner
