// Pure parts of the HTTP server (http_server.cpp): request targets, refusal
// texts and the rate limit on refusal log lines.
#pragma once

#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

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
