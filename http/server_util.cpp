#include "http/server_util.h"

#include <nlohmann/json.hpp>
#include <unordered_map>

namespace hb::http {

namespace {

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string percent_decode(std::string_view in) {
  std::string out;
  out.reserve(in.size());
  for (std::size_t i = 0; i < in.size(); ++i) {
    const int hi = in[i] == '%' && i + 2 < in.size() ? hex_value(in[i + 1]) : -1;
    const int lo = hi >= 0 ? hex_value(in[i + 2]) : -1;
    if (lo >= 0) {
      out.push_back(static_cast<char>(hi * 16 + lo));
      i += 2;
    } else {
      out.push_back(in[i]);
    }
  }
  return out;
}

}  // namespace

Target split_target(std::string_view target) {
  const std::size_t q = target.find('?');
  if (q == std::string_view::npos) return {percent_decode(target), ""};
  return {percent_decode(target.substr(0, q)), std::string(target.substr(q + 1))};
}

std::string refusal_body(std::string_view why) {
  return nlohmann::json{{"error", std::string(why)}}.dump(-1, ' ', false,
                                                          nlohmann::json::error_handler_t::replace);
}

bool unsafe_header_value(std::string_view value) {
  return value.find_first_of(std::string_view("\r\n\0", 3)) != std::string_view::npos;
}

Admission admit_connection(const std::vector<OpenConnection>& open, std::string_view source,
                           std::size_t total_max, std::size_t per_source_max, bool evict_idle) {
  std::unordered_map<std::string_view, std::size_t> held;
  for (const OpenConnection& c : open) ++held[c.source];
  const bool source_full = held[source] >= per_source_max;
  if (!source_full && open.size() < total_max) return {};
  if (!evict_idle) return {false, std::nullopt};
  // The victim: from this source when it is at its cap, else from the
  // source holding the most; the longest idle of those.
  std::optional<std::size_t> victim;
  for (std::size_t i = 0; i < open.size(); ++i) {
    const OpenConnection& c = open[i];
    if (!c.idle || (source_full && c.source != source)) continue;
    if (!victim) {
      victim = i;
      continue;
    }
    const OpenConnection& v = open[*victim];
    const std::size_t held_c = held[c.source], held_v = held[v.source];
    if (held_c > held_v || (held_c == held_v && c.idle_since < v.idle_since)) victim = i;
  }
  if (!victim) return {false, std::nullopt};
  return {true, victim};
}

std::optional<int> RefusalLog::should_log(int status, Clock::time_point now) {
  std::lock_guard lock(mutex_);
  Entry& e = by_status_[status];
  ++e.pending;
  if (e.logged_at && now - *e.logged_at < kRefusalLogInterval) return std::nullopt;
  const int folded = e.pending;
  e.pending = 0;
  e.logged_at = now;
  return folded;
}

}  // namespace hb::http
