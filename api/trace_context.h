// The OpenTelemetry contract the operator and the runner share: the W3C
// trace context a heartbeat's trace continues (the operator sets it on the
// runner's container as TRACEPARENT, the runner makes it the parent of its
// invoke_agent span), the trace a run's uid names, and the semantic
// conventions' opt-in variable both read. Pure.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace hb::api {

// W3C trace context, as the OpenTelemetry SDKs read it from the environment.
inline constexpr const char* kEnvTraceParent = "TRACEPARENT";
// A comma-separated list; kGenAiLatestExperimental in it switches the GenAI
// telemetry to the conventions' latest experimental names (and off the
// v1.36 ones), as the conventions' transition plan says.
inline constexpr const char* kEnvSemconvOptIn = "OTEL_SEMCONV_STABILITY_OPT_IN";
inline constexpr const char* kGenAiLatestExperimental = "gen_ai_latest_experimental";

inline constexpr std::size_t kTraceIdHexDigits = 32;
inline constexpr std::size_t kSpanIdHexDigits = 16;

struct TraceParent {
  std::string trace_id;        // 32 lower-case hex digits, not all zero
  std::string parent_span_id;  // 16, not all zero
};

// "00-<32 hex>-<16 hex>-<2 hex>" (a later version may append "-" fields),
// ids lower-case and not all zero; else nullopt.
std::optional<TraceParent> parse_traceparent(const std::string& text);
// Version 00, sampled: "00-<trace_id>-<span_id>-01".
std::string format_traceparent(const std::string& trace_id, const std::string& span_id);

// True when the opt-in list names kGenAiLatestExperimental (blanks around
// entries ignored).
bool gen_ai_latest_experimental(std::string_view opt_in);

// The trace of a run: its id is the run's uid without dashes (a UUID is 128
// bits, so `kubectl get hbr NAME -o jsonpath='{.metadata.uid}'` finds the
// trace), its parent the operator's scheduling span, whose id is derived
// from the uid (stable however often the Job is built). nullopt when the uid
// is not a UUID.
std::optional<TraceParent> run_trace_parent(std::string_view run_uid);

// A UUID-shaped id (32 hex digits, not all zero) derived from `key`: the
// trace of a run whose Job is made before the run has a uid.
std::string derived_trace_uid(std::string_view key);

}  // namespace hb::api
