// The shell tool: `/bin/sh -c COMMAND` in its own process group, stdin from
// /dev/null, stdout and stderr merged and captured head-and-tail, killed
// (SIGTERM, then SIGKILL) at its timeout, beating while it makes progress.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

namespace hb::runner {

struct ShellOptions {
  std::chrono::milliseconds timeout{60000};
  std::size_t head_bytes = 8 * 1024;
  std::size_t tail_bytes = 8 * 1024;
  std::chrono::milliseconds beat_interval{5000};
  // Called at most once per beat_interval, and only when the command made
  // progress since the last call: output was read, or cpu_ticks moved. A
  // hung command never beats, so its run's Lease runs out (Stalled).
  std::function<void()> beat;
  std::function<long long()> cpu_ticks;  // the command's CPU time so far; none: output only
  std::function<bool()> cancelled;       // polled; kills the command when true
  std::vector<std::string> env_remove;   // variables the command must not see (the API key)
  std::chrono::milliseconds kill_grace{2000};
  // The tools server's settings: a fixed environment ("NAME=value"; empty:
  // this process's, less env_remove), a working directory (empty: ours),
  // and a session of its own rather than only a process group.
  std::vector<std::string> environment;
  std::string working_dir;
  bool new_session = false;
};

struct ShellResult {
  int exit_code = -1;  // -1 when killed by a signal
  int signal = 0;
  bool timed_out = false;
  std::string output;  // head and tail, valid UTF-8
  std::size_t output_bytes = 0;
  bool truncated = false;
  std::chrono::milliseconds duration{0};
  std::string spawn_error;  // non-empty when /bin/sh could not start
};

ShellResult run_shell(const std::string& command, const ShellOptions& options);

// The text the model sees: "exit_code: N" (or timeout/signal) then the output.
std::string format_shell_result(const ShellResult& result);

}  // namespace hb::runner
