// The tools socket's wire format, between the runner (trusted) and the tools
// server (untrusted: it runs the commands the model chooses). One JSON object
// per line, one request per connection:
//   {"op":"lifeline"}   held open by the runner for its whole life; when it
//                       closes, the server kills everything and exits 0
//   {"op":"exec","command":"...","timeoutMs":N,"outputHeadBytes":H,"outputTailBytes":T}
//     -> zero or more {"progress":true} lines while the command runs, each
//        sent when it made progress (output read, CPU time moved), at most
//        one per kProgressInterval; the runner beats on each, and only on them
//     -> {"exitCode":N|null,"signal":N,"timedOut":B,"output":"...","outputBytes":N,
//         "truncated":B,"durationMs":N}   or   {"error":"..."}
// Both sides treat what they read as hostile: bounded size, bounded nesting,
// strict types, checked conversions. Pure.
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace hb::tools {

using namespace std::chrono_literals;

inline constexpr std::size_t kRequestBytesMax = 64 * 1024;
inline constexpr std::size_t kJsonDepthMax = 4;
inline constexpr std::size_t kOutputCaptureBytesMax = 16 * 1024;  // head or tail, each
// A reply's output is at most head + tail captured bytes, each of which may
// grow up to 6-fold on the wire: an invalid UTF-8 byte becomes U+FFFD (3
// bytes), a control byte "\u00XX" (6). So a legitimate reply (`cat` of a
// binary file) fits; the other fields and the omitted-bytes marker are small.
inline constexpr std::size_t kJsonEscapeGrowthMax = 6;
inline constexpr std::size_t kReplyOverheadBytes = 1024;
inline constexpr std::size_t kReplyBytesMax =
    kJsonEscapeGrowthMax * 2 * kOutputCaptureBytesMax + kReplyOverheadBytes;
inline constexpr std::chrono::milliseconds kExecTimeoutMax = 600s;
inline constexpr std::chrono::milliseconds kExecTimeoutMin = 1ms;
// At most one progress line per this long (the Lease is renewed far slower).
inline constexpr std::chrono::milliseconds kProgressInterval = 1s;

struct ExecRequest {
  std::string command;
  std::chrono::milliseconds timeout{60s};
  std::size_t head_bytes = 8 * 1024;
  std::size_t tail_bytes = 8 * 1024;
};

struct ExecReply {
  std::optional<int> exit_code;  // unset when killed by a signal
  int signal = 0;
  bool timed_out = false;
  std::string output;
  std::size_t output_bytes = 0;
  bool truncated = false;
  std::chrono::milliseconds duration{0};
  std::string error;  // the server could not run the command
};

struct Request {
  enum class Op { kLifeline, kExec } op = Op::kExec;
  ExecRequest exec;
};

// A value or why there is none.
template <typename T>
struct Decoded {
  std::optional<T> value;
  std::string error;
};

std::string encode_lifeline();
std::string encode_exec(const ExecRequest& request);
Decoded<Request> decode_request(std::string_view line);

std::string encode_reply(const ExecReply& reply);
// The progress line (with its newline), and whether a line (without it) is one.
std::string encode_progress();
bool is_progress(std::string_view line);
Decoded<ExecReply> decode_reply(std::string_view line);

}  // namespace hb::tools
