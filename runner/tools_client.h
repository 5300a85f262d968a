// How the runner's shell tool runs a command. In a heartbeat Pod it never
// runs one itself: RemoteShell asks the tools server in the `tools`
// container (another user, no key, no token) over the Unix socket named by
// HEARTBEAT_TOOLS_SOCKET. LocalShell runs in-process, for development and
// benchmarks only (HEARTBEAT_TOOLS_LOCAL=1). The server's replies are
// untrusted (runner/tools/protocol.h bounds them).
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "runner/shell_tool.h"

namespace hb::runner {

using namespace std::chrono_literals;

// The tools container starts beside the runner: its socket may take this
// long to appear after the runner starts (the kubelet starts a Pod's
// containers in order, and a custom tools image may still be pulling).
// Only a call that needs the tools waits for it; the model calls do not.
inline constexpr std::chrono::milliseconds kToolsConnectWait = 300s;
// Once it was reached, a later connect gets this long.
inline constexpr std::chrono::milliseconds kToolsReconnectWait = 2s;
inline constexpr std::chrono::milliseconds kToolsConnectRetry = 100ms;
// A runner that ends before the tools server listens (a heartbeat that never
// used the shell, seen on a real node where both containers start together)
// still connects its lifeline for up to this long after the result is
// written, so the server sees it close and exits: without it the server
// waits its whole lifeline wait and the Pod lingers.
inline constexpr std::chrono::milliseconds kToolsGoodbyeWait = 10s;
// How long a request may take to be read by the server (it is at most
// tools::kRequestBytesMax, so a server that reads at all takes it at once).
inline constexpr std::chrono::milliseconds kToolsSendTimeout = 10s;
// Past a call's own timeout and kill grace, how long to wait for the reply.
inline constexpr std::chrono::milliseconds kToolsReplySlack = 10s;
// Calls in a row that could not connect (each after its connect wait) before
// the tools container counts as gone. A server that was reached but answered
// badly or late fails that call only: the run goes on.
inline constexpr int kToolsFailuresMax = 2;

class ShellExecutor {
 public:
  virtual ~ShellExecutor() = default;
  virtual ShellResult run(const std::string& command, const ShellOptions& options) = 0;
  // The tools are gone for good: the loop should stop (tools_unavailable).
  virtual bool unavailable() const { return false; }
};

class LocalShell final : public ShellExecutor {
 public:
  ShellResult run(const std::string& command, const ShellOptions& options) override {
    return run_shell(command, options);
  }
};

// No tools container configured: every command is refused with why.
class NoShell final : public ShellExecutor {
 public:
  ShellResult run(const std::string& command, const ShellOptions& options) override;
};

// The connection the runner holds for its whole life: when the runner exits
// (or dies), the kernel closes it and the tools server kills everything and
// exits, so the Pod completes. lost() once the server side closed it. The
// destructor waits up to kToolsGoodbyeWait for a lifeline not yet connected.
class ToolsLifeline {
 public:
  ToolsLifeline(std::string socket_path, std::chrono::milliseconds connect_wait);
  ~ToolsLifeline();
  ToolsLifeline(const ToolsLifeline&) = delete;
  ToolsLifeline& operator=(const ToolsLifeline&) = delete;
  bool held() const { return held_; }
  bool lost() const { return lost_; }

 private:
  void hold();
  std::string path_;
  std::chrono::steady_clock::time_point give_up_;  // no server by then: lost()
  std::atomic<bool> held_{false}, lost_{false}, stopping_{false};
  std::atomic<int> fd_{-1};
  // While stopping, connecting goes on until this steady-clock time (ns).
  std::atomic<int64_t> goodbye_by_ns_{0};
  std::thread thread_;
};

class RemoteShell final : public ShellExecutor {
 public:
  RemoteShell(std::string socket_path, std::chrono::milliseconds connect_wait,
              const ToolsLifeline* lifeline = nullptr);
  ShellResult run(const std::string& command, const ShellOptions& options) override;
  bool unavailable() const override;

 private:
  int connect_with_retry(const ShellOptions& options, std::string& error);
  ShellResult exchange(int fd, const std::string& command, const ShellOptions& options);
  ShellResult decode(const std::string& line);
  ShellResult failed(const std::string& why);
  ShellResult connect_failed(const std::string& why);

  std::string path_;
  std::chrono::steady_clock::time_point first_connect_by_;
  bool reached_once_ = false;
  int connect_failures_in_a_row_ = 0;
  const ToolsLifeline* lifeline_;
};

}  // namespace hb::runner
