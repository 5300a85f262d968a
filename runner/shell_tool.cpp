#include "runner/shell_tool.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "runner/output_capture.h"

extern char** environ;

namespace hb::runner {
namespace {

using Steady = std::chrono::steady_clock;
using Millis = std::chrono::milliseconds;

// How often the loop wakes without output or exit, to beat, check the
// deadline and the cancel flag (a function, not a file descriptor).
constexpr Millis kPollSlice{50};
// Without a pidfd (kernels before 5.3), how often an exit is looked for once
// the command closed its output.
constexpr Millis kExitPollSliceWithoutPidfd{10};

// A descriptor that becomes readable when the child exits, so the loop wakes
// at once instead of sleeping; -1 when the kernel has no pidfd_open.
int open_pidfd(pid_t pid) {
#ifdef SYS_pidfd_open
  return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
#else
  (void)pid;
  return -1;
#endif
}

std::vector<std::string> child_environment(const std::vector<std::string>& remove) {
  std::vector<std::string> out;
  for (char** entry = environ; entry && *entry; ++entry) {
    std::string item(*entry);
    std::string name = item.substr(0, item.find('='));
    if (std::find(remove.begin(), remove.end(), name) == remove.end())
      out.push_back(std::move(item));
  }
  return out;
}

void drain(int fd, OutputCapture& capture) {
  char buffer[8192];
  while (true) {
    ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n > 0) {
      capture.append(std::string_view(buffer, static_cast<std::size_t>(n)));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    return;
  }
}

}  // namespace

ShellResult run_shell(const std::string& command, const ShellOptions& options) {
  ShellResult result;
  auto started = Steady::now();
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) {
    result.spawn_error = std::string("pipe: ") + std::strerror(errno);
    return result;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], 1);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], 2);
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  if (!options.working_dir.empty()) {
    posix_spawn_file_actions_addchdir_np(&actions, options.working_dir.c_str());
  }
  // A new session is also a new process group, so kill(-pid) reaches it.
  const short group_flag = options.new_session ? POSIX_SPAWN_SETSID : POSIX_SPAWN_SETPGROUP;
  posix_spawnattr_setflags(&attributes,
                           group_flag | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  if (!options.new_session) posix_spawnattr_setpgroup(&attributes, 0);
  sigset_t empty, all;
  sigemptyset(&empty);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attributes, &empty);
  posix_spawnattr_setsigdefault(&attributes, &all);

  std::vector<std::string> environment =
      options.environment.empty() ? child_environment(options.env_remove) : options.environment;
  std::vector<char*> envp;
  for (auto& item : environment) envp.push_back(item.data());
  envp.push_back(nullptr);
  std::string sh = "sh", dash_c = "-c", command_copy = command;
  char* argv[] = {sh.data(), dash_c.data(), command_copy.data(), nullptr};

  pid_t pid = 0;
  int spawn_status = ::posix_spawn(&pid, "/bin/sh", &actions, &attributes, argv, envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  ::close(pipe_fds[1]);
  if (spawn_status != 0) {
    ::close(pipe_fds[0]);
    result.spawn_error = std::string("cannot start /bin/sh: ") + std::strerror(spawn_status);
    return result;
  }
  ::fcntl(pipe_fds[0], F_SETFL, ::fcntl(pipe_fds[0], F_GETFL) | O_NONBLOCK);

  const int pidfd = open_pidfd(pid);
  OutputCapture capture(options.head_bytes, options.tail_bytes);
  auto deadline = started + options.timeout;
  auto next_beat = started + options.beat_interval;
  bool progressed = false;  // since the last beat
  long long cpu_seen = options.cpu_ticks ? options.cpu_ticks() : 0;
  Steady::time_point killed_at{};
  bool exited = false;
  int status = 0;
  bool pipe_open = true;
  while (true) {
    if (!exited) {
      pid_t done = ::waitpid(pid, &status, WNOHANG);
      if (done == pid) exited = true;
    }
    if (exited) {
      if (pipe_open) drain(pipe_fds[0], capture);
      break;
    }
    auto now = Steady::now();
    if (now >= next_beat) {
      if (options.cpu_ticks) {
        const long long cpu = options.cpu_ticks();
        progressed = progressed || cpu != cpu_seen;
        cpu_seen = cpu;
      }
      if (progressed && options.beat) options.beat();
      progressed = false;
      next_beat = now + options.beat_interval;
    }
    bool stop = now >= deadline || (options.cancelled && options.cancelled());
    if (stop && killed_at == Steady::time_point{}) {
      result.timed_out = now >= deadline;
      ::kill(-pid, SIGTERM);
      killed_at = now;
    } else if (killed_at != Steady::time_point{} && now - killed_at >= options.kill_grace) {
      ::kill(-pid, SIGKILL);
    }
    pollfd fds[2];
    nfds_t count = 0;
    if (pipe_open) fds[count++] = {pipe_fds[0], POLLIN, 0};
    if (pidfd >= 0) fds[count++] = {pidfd, POLLIN, 0};
    if (count == 0) {
      ::usleep(
          static_cast<useconds_t>(std::chrono::microseconds(kExitPollSliceWithoutPidfd).count()));
      continue;
    }
    int ready = ::poll(fds, count, static_cast<int>(kPollSlice.count()));
    if (ready > 0 && pipe_open && (fds[0].revents & (POLLIN | POLLHUP)) != 0) {
      char buffer[8192];
      ssize_t n = ::read(pipe_fds[0], buffer, sizeof buffer);
      if (n > 0) {
        capture.append(std::string_view(buffer, static_cast<std::size_t>(n)));
        progressed = true;
      } else if (n == 0) {
        pipe_open = false;  // every writer closed; wait for the exit
      }
    }
  }
  // Background children of the command die with it: a heartbeat leaves nothing running.
  ::kill(-pid, SIGKILL);
  ::close(pipe_fds[0]);
  if (pidfd >= 0) ::close(pidfd);

  if (WIFEXITED(status)) {
    result.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    result.signal = WTERMSIG(status);
  }
  result.output = capture.text();
  result.output_bytes = capture.total_bytes();
  result.truncated = capture.truncated();
  result.duration = std::chrono::duration_cast<Millis>(Steady::now() - started);
  return result;
}

std::string format_shell_result(const ShellResult& result) {
  if (!result.spawn_error.empty()) return result.spawn_error;
  std::string out;
  if (result.timed_out) {
    out = "timed out after " + std::to_string(result.duration.count() / 1000) + " s; killed\n";
  } else if (result.signal != 0) {
    out = "killed by signal " + std::to_string(result.signal) + "\n";
  } else {
    out = "exit_code: " + std::to_string(result.exit_code) + "\n";
  }
  if (result.truncated) {
    out += "output: " + std::to_string(result.output_bytes) + " bytes, middle omitted\n";
  }
  out += result.output.empty() ? std::string("(no output)") : result.output;
  return out;
}

}  // namespace hb::runner
