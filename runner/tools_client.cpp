#include "runner/tools_client.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "runner/tools/protocol.h"
#include "runner/tools/unix_socket.h"

namespace hb::runner {
namespace {

using tools::connect_unix;

using Steady = std::chrono::steady_clock;
using Millis = std::chrono::milliseconds;

constexpr Millis kReplyPollSlice{50};
constexpr Millis kLifelinePollSlice{200};

// Sends all of `text` by `deadline`, or says why not; a cancel ends it at
// once. A server that accepts and never reads cannot hold the runner.
std::string send_bounded(int fd, const std::string& text, Steady::time_point deadline,
                         const std::function<bool()>& cancelled) {
  std::size_t sent = 0;
  while (sent < text.size()) {
    if (cancelled && cancelled()) return "cancelled: the heartbeat is ending";
    if (Steady::now() >= deadline) return "the request was not read within the send timeout";
    pollfd p{fd, POLLOUT, 0};
    if (::poll(&p, 1, static_cast<int>(kReplyPollSlice.count())) <= 0) continue;
    const ssize_t n =
        ::send(fd, text.data() + sent, text.size() - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) continue;
    if (n <= 0) return std::string("send: ") + std::strerror(errno);
    sent += static_cast<std::size_t>(n);
  }
  return {};
}

ShellResult from_reply(const tools::ExecReply& reply) {
  ShellResult r;
  if (!reply.error.empty()) {
    r.spawn_error = "the tools container could not run the command: " + reply.error;
    return r;
  }
  r.exit_code = reply.exit_code.value_or(-1);
  r.signal = reply.signal;
  r.timed_out = reply.timed_out;
  r.output = reply.output;
  r.output_bytes = reply.output_bytes;
  r.truncated = reply.truncated;
  r.duration = reply.duration;
  return r;
}

}  // namespace

ShellResult NoShell::run(const std::string&, const ShellOptions&) {
  ShellResult r;
  r.spawn_error =
      "no tools container is configured for this runner (HEARTBEAT_TOOLS_SOCKET is unset); "
      "commands cannot run";
  return r;
}

ToolsLifeline::ToolsLifeline(std::string socket_path, Millis connect_wait)
    : path_(std::move(socket_path)), give_up_(Steady::now() + connect_wait) {
  thread_ = std::thread([this] { hold(); });
}

ToolsLifeline::~ToolsLifeline() {
  const auto goodbye_by = std::min(Steady::now() + kToolsGoodbyeWait, give_up_);
  goodbye_by_ns_ =
      std::chrono::duration_cast<std::chrono::nanoseconds>(goodbye_by.time_since_epoch()).count();
  stopping_ = true;
  if (int fd = fd_.load(); fd >= 0) ::shutdown(fd, SHUT_RDWR);
  thread_.join();
  if (int fd = fd_.load(); fd >= 0) ::close(fd);
}

void ToolsLifeline::hold() {
  auto past_goodbye = [this] {
    return stopping_ &&
           Steady::now().time_since_epoch() >= std::chrono::nanoseconds(goodbye_by_ns_.load());
  };
  int fd = -1;
  while ((fd = connect_unix(path_)) < 0) {
    if (Steady::now() >= give_up_ || past_goodbye()) {
      if (!stopping_) lost_ = true;
      return;
    }
    std::this_thread::sleep_for(kToolsConnectRetry);
  }
  fd_ = fd;
  if (!send_bounded(fd, tools::encode_lifeline(), Steady::now() + kToolsSendTimeout, past_goodbye)
           .empty()) {
    lost_ = true;
    return;
  }
  held_ = true;
  // Nothing is ever sent back: a readable socket means the server closed it.
  char byte = 0;
  while (!stopping_) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(kLifelinePollSlice.count())) <= 0) continue;
    const ssize_t n = ::recv(fd, &byte, 1, MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
      if (!stopping_) lost_ = true;
      return;
    }
  }
}

RemoteShell::RemoteShell(std::string socket_path, Millis connect_wait,
                         const ToolsLifeline* lifeline)
    : path_(std::move(socket_path)),
      first_connect_by_(Steady::now() + connect_wait),
      lifeline_(lifeline) {}

bool RemoteShell::unavailable() const {
  return (lifeline_ != nullptr && lifeline_->lost()) ||
         connect_failures_in_a_row_ >= kToolsFailuresMax;
}

ShellResult RemoteShell::failed(const std::string& why) {
  ShellResult r;
  r.spawn_error = "the tools container did not answer: " + why;
  return r;
}

ShellResult RemoteShell::connect_failed(const std::string& why) {
  ++connect_failures_in_a_row_;
  return failed(why);
}

int RemoteShell::connect_with_retry(const ShellOptions& options, std::string& error) {
  const auto give_up = reached_once_ ? Steady::now() + kToolsReconnectWait
                                     : std::max(first_connect_by_, Steady::now());
  auto next_beat = Steady::now() + options.beat_interval;
  while (true) {
    const int fd = connect_unix(path_);
    if (fd >= 0) return fd;
    error = "connect " + path_ + ": " + std::strerror(errno);
    if (Steady::now() >= give_up || (options.cancelled && options.cancelled())) return -1;
    if (Steady::now() >= next_beat && options.beat) {
      options.beat();
      next_beat = Steady::now() + options.beat_interval;
    }
    std::this_thread::sleep_for(kToolsConnectRetry);
  }
}

ShellResult RemoteShell::run(const std::string& command, const ShellOptions& options) {
  if (lifeline_ != nullptr && lifeline_->lost()) return failed("its lifeline connection closed");
  std::string error;
  const int fd = connect_with_retry(options, error);
  if (fd < 0) return connect_failed(error);
  reached_once_ = true;
  connect_failures_in_a_row_ = 0;
  ShellResult result = exchange(fd, command, options);
  ::close(fd);
  return result;
}

// Sends the request, then waits for the reply line, beating on each progress
// line before it (and only then: a hung command lets the Lease run out); a
// cancel closes the connection (the server then kills the call's processes).
ShellResult RemoteShell::exchange(int fd, const std::string& command, const ShellOptions& options) {
  tools::ExecRequest request{command, options.timeout, options.head_bytes, options.tail_bytes};
  const std::string line = tools::encode_exec(request);
  if (line.size() > tools::kRequestBytesMax) {
    ShellResult r;
    r.spawn_error = "the command is too long: its request is " + std::to_string(line.size()) +
                    " bytes and the tools server takes at most " +
                    std::to_string(tools::kRequestBytesMax);
    return r;
  }
  const std::string unsent =
      send_bounded(fd, line, Steady::now() + kToolsSendTimeout, options.cancelled);
  if (!unsent.empty()) return failed(unsent);
  const auto give_up = Steady::now() + options.timeout + options.kill_grace + kToolsReplySlack;
  std::string pending;
  char buffer[8192];
  while (true) {
    if (options.cancelled && options.cancelled()) {
      ShellResult r;
      r.spawn_error = "cancelled: the heartbeat is ending";
      return r;
    }
    if (Steady::now() >= give_up) return failed("no reply within the call's timeout");
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(kReplyPollSlice.count())) <= 0) continue;
    const ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
    if (n <= 0) return failed("the connection closed before a reply");
    pending.append(buffer, static_cast<std::size_t>(n));
    std::size_t newline = 0;
    while ((newline = pending.find('\n')) != std::string::npos) {
      if (!tools::is_progress(std::string_view(pending).substr(0, newline))) {
        return decode(pending.substr(0, newline));
      }
      if (options.beat) options.beat();
      pending.erase(0, newline + 1);
    }
    if (pending.size() > tools::kReplyBytesMax + 1) return failed("the reply is too long");
  }
}

ShellResult RemoteShell::decode(const std::string& line) {
  auto decoded = tools::decode_reply(line);
  if (!decoded.value) return failed(decoded.error);
  return from_reply(*decoded.value);
}

}  // namespace hb::runner
