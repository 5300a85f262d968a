// The tools server: the untrusted container's one program. It listens on a
// Unix socket in an emptyDir shared with the runner, runs each exec request
// as `/bin/sh -c` in a session of its own, in the workspace, with a fixed
// environment, and when a call ends (exit, timeout, the client gone) kills
// every process the call left. It exits 0, killing everything, when the
// runner's lifeline connection closes or never comes.
#pragma once

#include <chrono>
#include <string>

namespace hb::tools {

using namespace std::chrono_literals;

inline constexpr std::chrono::seconds kLifelineWaitDefault = 120s;
// A client must send its request line within this.
inline constexpr std::chrono::milliseconds kRequestReadTimeout = 10s;
// Connections waiting to be accepted; the kernel refuses more.
inline constexpr int kListenBacklog = 4;
inline constexpr std::chrono::milliseconds kPollSlice = 100ms;
// The commands' environment (nothing is inherited from the server).
inline constexpr const char* kCommandPath = "/usr/local/bin:/usr/bin:/bin";

struct ServerOptions {
  std::string socket_path;
  std::string workdir = "/workspace";
  std::chrono::seconds lifeline_wait = kLifelineWaitDefault;
};

// Exit codes of heartbeat-tools.
inline constexpr int kServerExitDone = 0;    // the lifeline closed or never came
inline constexpr int kServerExitUsage = 2;   // bad flags
inline constexpr int kServerExitSocket = 3;  // cannot listen

// Runs until the lifeline ends. Logs one line per call to stderr.
int run_server(const ServerOptions& options);

}  // namespace hb::tools
