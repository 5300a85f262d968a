// OpenTelemetry spans as the operator and the runner record them, and the
// resource that names who sent them: the data model of OTLP's trace
// signal, no more than both need. Pure but for random_hex_id's randomness.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace hb::otlp {

using TimePoint = std::chrono::system_clock::time_point;

inline constexpr std::size_t kTraceIdBytes = 16;
inline constexpr std::size_t kSpanIdBytes = 8;

using AttributeValue = std::variant<std::string, long long>;
using Attributes = std::vector<std::pair<std::string, AttributeValue>>;

// OTLP's SpanKind and Status.code numbers.
enum class SpanKind : int { kInternal = 1, kClient = 3, kProducer = 4 };
enum class StatusCode : int { kUnset = 0, kOk = 1, kError = 2 };

struct Span {
  std::string trace_id;        // 32 lower-case hex digits
  std::string span_id;         // 16
  std::string parent_span_id;  // 16, or empty for a root
  std::string name;
  SpanKind kind = SpanKind::kInternal;
  TimePoint start;
  TimePoint end;
  Attributes attributes;
  StatusCode status = StatusCode::kUnset;
  std::string status_message;
};

struct Resource {
  Attributes attributes;  // service.name first
};

// Random ids in lower-case hex (never all zeros).
std::string random_hex_id(std::size_t bytes);

}  // namespace hb::otlp
