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
#include <optional>

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

// One read of the command's output into `capture`: the bytes read, 0 at its
// end, -1 on an error (errno set).
ssize_t read_into(int fd, OutputCapture& capture) {
  char buffer[8192];
  const ssize_t n = ::read(fd, buffer, sizeof buffer);
  if (n > 0) capture.append(std::string_view(buffer, static_cast<std::size_t>(n)));
  return n;
}

void drain(int fd, OutputCapture& capture) {
  while (true) {
    const ssize_t n = read_into(fd, capture);
    if (n > 0 || (n < 0 && errno == EINTR)) continue;
    return;
  }
}

// posix_spawn's settings for the command: stdin from /dev/null, stdout and
// stderr into `output_fd`, a process group (or session) of its own, every
// signal unblocked and at its default.
struct SpawnSetup {
  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attributes;

  SpawnSetup(int output_fd, const ShellOptions& options) {
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&actions, output_fd, 1);
    posix_spawn_file_actions_adddup2(&actions, output_fd, 2);
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
  }
  ~SpawnSetup() {
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attributes);
  }
  SpawnSetup(const SpawnSetup&) = delete;
  SpawnSetup& operator=(const SpawnSetup&) = delete;
};

// `/bin/sh -c command` writing into `output_fd`: posix_spawn's error, 0 when
// it started as `pid`.
int spawn_shell(const std::string& command, const ShellOptions& options, int output_fd,
                pid_t& pid) {
  const SpawnSetup setup(output_fd, options);
  std::vector<std::string> environment =
      options.environment.empty() ? child_environment(options.env_remove) : options.environment;
  std::vector<char*> envp;
  for (auto& item : environment) envp.push_back(item.data());
  envp.push_back(nullptr);
  std::string sh = "sh", dash_c = "-c", command_copy = command;
  char* argv[] = {sh.data(), dash_c.data(), command_copy.data(), nullptr};
  return ::posix_spawn(&pid, "/bin/sh", &setup.actions, &setup.attributes, argv, envp.data());
}

// The running command: its pid, the read end of its output (non-blocking)
// and its pidfd (-1 without one).
struct Child {
  pid_t pid;
  int output_fd;
  int pidfd;
};

std::optional<Child> start_shell(const std::string& command, const ShellOptions& options,
                                 std::string& spawn_error) {
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) {
    spawn_error = std::string("pipe: ") + std::strerror(errno);
    return std::nullopt;
  }
  pid_t pid = 0;
  const int spawn_status = spawn_shell(command, options, pipe_fds[1], pid);
  ::close(pipe_fds[1]);
  if (spawn_status != 0) {
    ::close(pipe_fds[0]);
    spawn_error = std::string("cannot start /bin/sh: ") + std::strerror(spawn_status);
    return std::nullopt;
  }
  ::fcntl(pipe_fds[0], F_SETFL, ::fcntl(pipe_fds[0], F_GETFL) | O_NONBLOCK);
  return Child{pid, pipe_fds[0], open_pidfd(pid)};
}

// What the loop keeps between its turns while the command runs.
struct Watch {
  Steady::time_point deadline;
  Steady::time_point next_beat;
  bool progressed = false;  // since the last beat
  long long cpu_seen = 0;
  Steady::time_point killed_at{};  // the SIGTERM; epoch: none sent
  bool timed_out = false;
  bool pipe_open = true;
};

// At most once per beat_interval, and only when output was read or CPU
// ticks moved since the last beat: a hung command never beats.
void beat_if_due(const ShellOptions& options, Steady::time_point now, Watch& watch) {
  if (now < watch.next_beat) return;
  if (options.cpu_ticks) {
    const long long cpu = options.cpu_ticks();
    watch.progressed = watch.progressed || cpu != watch.cpu_seen;
    watch.cpu_seen = cpu;
  }
  if (watch.progressed && options.beat) options.beat();
  watch.progressed = false;
  watch.next_beat = now + options.beat_interval;
}

// SIGTERM to the command's process group at the deadline or on cancel, then
// SIGKILL on every turn once kill_grace has passed since.
void stop_if_due(pid_t pid, const ShellOptions& options, Steady::time_point now, Watch& watch) {
  const bool stop = now >= watch.deadline || (options.cancelled && options.cancelled());
  if (stop && watch.killed_at == Steady::time_point{}) {
    watch.timed_out = now >= watch.deadline;
    ::kill(-pid, SIGTERM);
    watch.killed_at = now;
  } else if (watch.killed_at != Steady::time_point{} &&
             now - watch.killed_at >= options.kill_grace) {
    ::kill(-pid, SIGKILL);
  }
}

// Sleeps until output or the exit, at most one poll slice, and reads one
// buffer of output if there is some.
void read_or_wait(const Child& child, OutputCapture& capture, Watch& watch) {
  pollfd fds[2];
  nfds_t count = 0;
  if (watch.pipe_open) fds[count++] = {child.output_fd, POLLIN, 0};
  if (child.pidfd >= 0) fds[count++] = {child.pidfd, POLLIN, 0};
  if (count == 0) {
    ::usleep(
        static_cast<useconds_t>(std::chrono::microseconds(kExitPollSliceWithoutPidfd).count()));
    return;
  }
  const int ready = ::poll(fds, count, static_cast<int>(kPollSlice.count()));
  if (ready <= 0 || !watch.pipe_open || (fds[0].revents & (POLLIN | POLLHUP)) == 0) return;
  const ssize_t n = read_into(child.output_fd, capture);
  if (n > 0) watch.progressed = true;
  if (n == 0) watch.pipe_open = false;  // every writer closed; wait for the exit
}

// How the command ended: its wait status, and whether its deadline (not a
// cancel) stopped it.
struct Exit {
  int status = 0;
  bool timed_out = false;
};

// Beats, stops and reads until the command exits, then takes the output it
// left in the pipe.
Exit watch_until_exit(const Child& child, const ShellOptions& options, Steady::time_point started,
                      OutputCapture& capture) {
  Watch watch;
  watch.deadline = started + options.timeout;
  watch.next_beat = started + options.beat_interval;
  watch.cpu_seen = options.cpu_ticks ? options.cpu_ticks() : 0;
  Exit ended;
  while (::waitpid(child.pid, &ended.status, WNOHANG) != child.pid) {
    const auto now = Steady::now();
    beat_if_due(options, now, watch);
    stop_if_due(child.pid, options, now, watch);
    read_or_wait(child, capture, watch);
  }
  if (watch.pipe_open) drain(child.output_fd, capture);
  ended.timed_out = watch.timed_out;
  return ended;
}

}  // namespace

ShellResult run_shell(const std::string& command, const ShellOptions& options) {
  ShellResult result;
  const auto started = Steady::now();
  const std::optional<Child> child = start_shell(command, options, result.spawn_error);
  if (!child) return result;
  OutputCapture capture(options.head_bytes, options.tail_bytes);
  const Exit ended = watch_until_exit(*child, options, started, capture);
  // Background children of the command die with it: a heartbeat leaves nothing running.
  ::kill(-child->pid, SIGKILL);
  ::close(child->output_fd);
  if (child->pidfd >= 0) ::close(child->pidfd);

  result.timed_out = ended.timed_out;
  if (WIFEXITED(ended.status)) {
    result.exit_code = WEXITSTATUS(ended.status);
  } else if (WIFSIGNALED(ended.status)) {
    result.signal = WTERMSIG(ended.status);
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
