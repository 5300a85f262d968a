#include "api/trace_context.h"

#include <cctype>
#include <cstdint>

namespace hb::api {
namespace {

constexpr std::size_t kTraceParentChars = 55;  // version 00: 2 + 1 + 32 + 1 + 16 + 1 + 2

bool is_hex(std::string_view text) {
  return text.find_first_not_of("0123456789abcdef") == std::string_view::npos;
}

bool is_id(std::string_view text, std::size_t digits) {
  return text.size() == digits && is_hex(text) && text.find_first_not_of('0') != text.npos;
}

std::string trim(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) {
    text.remove_prefix(1);
  }
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) {
    text.remove_suffix(1);
  }
  return std::string(text);
}

// FNV-1a, 64 bits: a stable, well-spread span id from a run's uid.
std::uint64_t fnv1a(std::string_view text) {
  constexpr std::uint64_t kOffset = 14695981039346656037ULL;
  constexpr std::uint64_t kPrime = 1099511628211ULL;
  std::uint64_t hash = kOffset;
  for (char c : text) {
    hash ^= static_cast<unsigned char>(c);
    hash *= kPrime;
  }
  return hash;
}

std::string hex64(std::uint64_t value) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out(kSpanIdHexDigits, '0');
  for (std::size_t i = kSpanIdHexDigits; i-- > 0; value >>= 4) out[i] = kDigits[value & 0xfU];
  return out;
}

}  // namespace

std::optional<TraceParent> parse_traceparent(const std::string& text) {
  if (text.size() < kTraceParentChars || text[2] != '-' || text[35] != '-' || text[52] != '-') {
    return std::nullopt;
  }
  const std::string version = text.substr(0, 2);
  if (!is_hex(version) || version == "ff") return std::nullopt;
  if (version == "00" ? text.size() != kTraceParentChars
                      : text.size() > kTraceParentChars && text[kTraceParentChars] != '-') {
    return std::nullopt;
  }
  if (!is_hex(text.substr(53, 2))) return std::nullopt;
  TraceParent parent{text.substr(3, kTraceIdHexDigits), text.substr(36, kSpanIdHexDigits)};
  if (!is_id(parent.trace_id, kTraceIdHexDigits) ||
      !is_id(parent.parent_span_id, kSpanIdHexDigits)) {
    return std::nullopt;
  }
  return parent;
}

std::string format_traceparent(const std::string& trace_id, const std::string& span_id) {
  return "00-" + trace_id + "-" + span_id + "-01";
}

bool gen_ai_latest_experimental(std::string_view opt_in) {
  while (!opt_in.empty()) {
    const std::size_t comma = opt_in.find(',');
    if (trim(opt_in.substr(0, comma)) == kGenAiLatestExperimental) return true;
    if (comma == std::string_view::npos) break;
    opt_in.remove_prefix(comma + 1);
  }
  return false;
}

std::optional<TraceParent> run_trace_parent(std::string_view run_uid) {
  std::string trace_id;
  for (char c : run_uid) {
    if (c == '-') continue;
    trace_id += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  if (!is_id(trace_id, kTraceIdHexDigits)) return std::nullopt;
  std::uint64_t span = fnv1a(std::string("schedule/") + trace_id);
  if (span == 0) span = 1;
  return TraceParent{trace_id, hex64(span)};
}

static_assert(2 * kSpanIdHexDigits == kTraceIdHexDigits, "two 64-bit hashes make a trace id");

std::string derived_trace_uid(std::string_view key) {
  const std::string high = hex64(fnv1a(std::string("trace/") + std::string(key)));
  std::uint64_t low = fnv1a(std::string("trace-low/") + std::string(key));
  if (low == 0) low = 1;  // never the all-zero id W3C trace context forbids
  return high + hex64(low);
}

}  // namespace hb::api
