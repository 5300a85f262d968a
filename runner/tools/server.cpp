#include "runner/tools/server.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <iostream>
#include <optional>

#include "runner/shell_tool.h"
#include "runner/tools/process_tree.h"
#include "runner/tools/protocol.h"
#include "runner/tools/unix_socket.h"

namespace hb::tools {
namespace {

using Steady = std::chrono::steady_clock;
using runner::run_shell;
using runner::ShellOptions;
using runner::ShellResult;

ExecReply error_reply(const std::string& error) {
  ExecReply reply;
  reply.error = error;
  return reply;
}

constexpr std::size_t kLoggedCommandBytesMax = 80;

// SIGTERM (the Pod is deleted): end like a closed lifeline. Without this
// the server would die at once, and the call's setsid children, orphaned to
// init, would outlive it where no PID namespace ends them all.
std::atomic<bool> g_terminate{false};

void on_terminate(int) {
  g_terminate = true;
}

// A short, one-line excerpt of an agent-chosen command: a newline or escape
// in it must not forge or garble log lines.
std::string loggable(const std::string& command) {
  std::string out = command.substr(0, kLoggedCommandBytesMax);
  for (char& c : out) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f || c == '"') c = '?';
  }
  return command.size() > kLoggedCommandBytesMax ? out + "..." : out;
}

void log_line(const std::string& text) {
  std::cerr << "heartbeat-tools: " << text << std::endl;
}

// The first line a client sends, within kRequestReadTimeout and
// kRequestBytesMax; nullopt (and why) otherwise.
std::optional<std::string> read_request_line(int fd, std::string& error) {
  const auto deadline = Steady::now() + kRequestReadTimeout;
  std::string line;
  char buffer[4096];
  while (true) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Steady::now());
    if (left.count() <= 0) {
      error = "no request within " + std::to_string(kRequestReadTimeout.count()) + " ms";
      return std::nullopt;
    }
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
    const ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
    if (n <= 0) {
      error = "the client closed before a whole request";
      return std::nullopt;
    }
    line.append(buffer, static_cast<std::size_t>(n));
    if (auto newline = line.find('\n'); newline != std::string::npos)
      return line.substr(0, newline);
    if (line.size() > kRequestBytesMax) {
      error = "request longer than " + std::to_string(kRequestBytesMax) + " bytes";
      return std::nullopt;
    }
  }
}

void send_all(int fd, const std::string& text) {
  std::size_t sent = 0;
  while (sent < text.size()) {
    const ssize_t n = ::send(fd, text.data() + sent, text.size() - sent, MSG_NOSIGNAL);
    if (n <= 0 && errno != EINTR) return;
    if (n > 0) sent += static_cast<std::size_t>(n);
  }
}

// True once the peer closed (or reset) the connection.
bool peer_gone(int fd) {
  if (fd < 0) return true;
  pollfd p{fd, POLLIN, 0};
  if (::poll(&p, 1, 0) <= 0) return false;
  if ((p.revents & (POLLHUP | POLLERR)) != 0) return true;
  char byte = 0;
  return ::recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT) == 0;
}

// Nothing is meant to arrive on the lifeline; bytes that do are dropped (one
// read per wake-up), or poll() would report them forever and the loop spin.
void drop_pending(int fd) {
  char buffer[4096];
  [[maybe_unused]] const ssize_t n = ::recv(fd, buffer, sizeof buffer, MSG_DONTWAIT);
}

ExecReply execute(const ExecRequest& request, const std::string& workdir,
                  const std::function<bool()>& cancelled, const std::function<void()>& progress) {
  ShellOptions options;
  options.beat_interval = kProgressInterval;
  options.beat = progress;
  options.cpu_ticks = descendants_cpu_ticks;
  options.timeout = request.timeout;
  options.head_bytes = request.head_bytes;
  options.tail_bytes = request.tail_bytes;
  options.cancelled = cancelled;
  options.environment = {std::string("PATH=") + kCommandPath, "HOME=" + workdir, "TMPDIR=/tmp",
                         "LANG=C.UTF-8"};
  options.working_dir = workdir;
  options.new_session = true;
  const ShellResult result = run_shell(request.command, options);
  ExecReply reply;
  if (!result.spawn_error.empty()) reply.error = result.spawn_error;
  if (result.signal == 0 && result.exit_code >= 0) reply.exit_code = result.exit_code;
  reply.signal = result.signal;
  reply.timed_out = result.timed_out;
  reply.output = result.output;
  reply.output_bytes = result.output_bytes;
  reply.truncated = result.truncated;
  reply.duration = result.duration;
  return reply;
}

class Server {
 public:
  explicit Server(const ServerOptions& options) : options_(options) {}

  int run(int listener) {
    const auto lifeline_by = Steady::now() + options_.lifeline_wait;
    while (true) {
      if (g_terminate) return finish("terminated by signal");
      if (lifeline_ >= 0 && peer_gone(lifeline_)) return finish("the runner's lifeline closed");
      if (lifeline_ < 0 && Steady::now() >= lifeline_by) {
        return finish("no lifeline within " + std::to_string(options_.lifeline_wait.count()) +
                      " s");
      }
      pollfd p[2] = {{listener, POLLIN, 0}, {lifeline_, POLLIN, 0}};
      if (::poll(p, lifeline_ >= 0 ? 2 : 1, static_cast<int>(kPollSlice.count())) <= 0) continue;
      if (lifeline_ >= 0 && (p[1].revents & POLLIN) != 0) drop_pending(lifeline_);
      if ((p[0].revents & POLLIN) == 0) continue;
      const int client = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
      if (client >= 0) serve(client);
    }
  }

 private:
  void serve(int client) {
    std::string error;
    std::optional<std::string> line = read_request_line(client, error);
    Decoded<Request> request;
    if (line) request = decode_request(*line);
    if (line && !request.value) error = request.error;
    if (!request.value) {
      send_all(client, encode_reply(error_reply(error)));
      ::close(client);
      log_line("refused a connection: " + error);
      return;
    }
    if (request.value->op == Request::Op::kLifeline) return take_lifeline(client);
    const ExecRequest& exec = request.value->exec;
    bool lifeline_lost = false;
    const std::string progress = encode_progress();
    ExecReply reply = execute(
        exec, options_.workdir,
        [&] {
          lifeline_lost = lifeline_ >= 0 && peer_gone(lifeline_);
          return g_terminate || lifeline_lost || peer_gone(client);
        },
        // Never blocks: a runner that does not read its progress misses it.
        [&] { ::send(client, progress.data(), progress.size(), MSG_NOSIGNAL | MSG_DONTWAIT); });
    const int killed = kill_all_descendants();
    send_all(client, encode_reply(reply));
    ::close(client);
    log_line("exec \"" + loggable(exec.command) +
             "\" exit=" + (reply.exit_code ? std::to_string(*reply.exit_code) : "none") +
             " signal=" + std::to_string(reply.signal) + " ms=" +
             std::to_string(reply.duration.count()) + " left_killed=" + std::to_string(killed));
  }

  void take_lifeline(int client) {
    if (lifeline_ >= 0) {
      send_all(client, encode_reply(error_reply("a lifeline is already held")));
      ::close(client);
      return;
    }
    lifeline_ = client;
    log_line("the runner holds the lifeline");
  }

  int finish(const std::string& why) {
    const int killed = kill_all_descendants();
    log_line(why + "; killed " + std::to_string(killed) + " processes; exiting");
    return kServerExitDone;
  }

  const ServerOptions& options_;
  int lifeline_ = -1;
};

}  // namespace

int run_server(const ServerOptions& options) {
  // Orphans of the calls (setsid, double fork) become ours, so they can be killed.
  if (::prctl(PR_SET_CHILD_SUBREAPER, 1) != 0) {
    log_line(std::string("cannot become a child subreaper: ") + std::strerror(errno));
    return kServerExitSocket;
  }
  ::signal(SIGPIPE, SIG_IGN);
  struct sigaction action {};
  action.sa_handler = on_terminate;
  sigemptyset(&action.sa_mask);
  ::sigaction(SIGTERM, &action, nullptr);
  ::sigaction(SIGINT, &action, nullptr);
  std::string error;
  const int listener = listen_unix(options.socket_path, kListenBacklog, 0666, error);
  if (listener < 0) {
    log_line(error);
    return kServerExitSocket;
  }
  log_line("listening on " + options.socket_path + ", commands run in " + options.workdir);
  const int code = Server(options).run(listener);
  ::close(listener);
  ::unlink(options.socket_path.c_str());
  return code;
}

}  // namespace hb::tools
