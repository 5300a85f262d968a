// Pure parts of the HTTP server (http_server.cpp): request targets, refusal
// texts and the rate limit on refusal log lines.
#pragma once

#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hb::http {

// One log line per listener and status per interval: a flood of slow clients
// must not become a flood of log lines.
inline constexpr std::chrono::seconds kRefusalLogInterval{10};

struct Target {
  std::string path;   // percent-decoded
  std::string query;  // raw
};

// Splits "/a%20b?x=1" into {"/a b", "x=1"}. A malformed escape stays as sent.
Target split_target(std::string_view target);

// The JSON body of a refusal: {"error": why}.
std::string refusal_body(std::string_view why);

// A header value a handler gave that could split the response (CR/LF/NUL).
bool unsafe_header_value(std::string_view value);

// One open connection of a listener, as the accept decision sees it.
struct OpenConnection {
  std::string_view source;  // the peer's IP
  bool idle = false;        // waiting for a request (not in a handler, not writing)
  std::chrono::steady_clock::time_point idle_since;
};

// What to do with a new connection from `source`: admit it, after closing
// open[*evict] when that is set, or refuse it (503). Past the per-source cap
// the source's own oldest idle connection goes; past the total cap the
// oldest idle one of the source holding the most connections (a probe's
// source, holding one, is the last to lose any).
struct Admission {
  bool admit = true;
  std::optional<std::size_t> evict;
};
Admission admit_connection(const std::vector<OpenConnection>& open, std::string_view source,
                           std::size_t total_max, std::size_t per_source_max, bool evict_idle);

// Counts refusals per status; says when one should be logged, and how many
// went unlogged since the last line.
class RefusalLog {
 public:
  using Clock = std::chrono::steady_clock;
  // nullopt: stay quiet; otherwise the refusals folded into this line (>= 1).
  std::optional<int> should_log(int status, Clock::time_point now);

 private:
  struct Entry {
    std::optional<Clock::time_point> logged_at;
    int pending = 0;
  };
  std::mutex mutex_;
  std::map<int, Entry> by_status_;
};

}  // namespace hb::http
