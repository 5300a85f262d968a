#include "tools/local_kubelet/process.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

namespace hb::local_kubelet {
namespace {

constexpr int kLogFileMode = 0640;
constexpr mode_t kContainerUmask = 022;  // as a container runtime sets it
constexpr int kFdScanMax = 65536;        // fallback when close_range is unavailable

bool executable(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

// What the child reports through its error pipe when it cannot exec.
enum class Stage : int { kSetgroups, kSetgid, kSetuid, kNoNewPrivs, kChdir, kExec };
struct ChildFailure {
  Stage stage = Stage::kExec;
  int error = 0;
};

struct ChildSetup {
  std::string program;
  std::vector<char*> argv, envp;
  const char* working_dir = nullptr;
  const Identity* identity = nullptr;
  bool no_new_privs = false;
  int log_fd = -1, null_fd = -1, error_fd = -1;
  pid_t parent = 0;
};

[[noreturn]] void report(int fd, Stage stage) {
  const ChildFailure failure{stage, errno};
  ssize_t ignored = ::write(fd, &failure, sizeof failure);
  (void)ignored;
  ::_exit(127);
}

// In the forked child: async-signal-safe calls only. Raw syscalls change the
// credentials of this (only) thread, without glibc's all-threads machinery.
[[noreturn]] void run_child(const ChildSetup& c) {
  ::setsid();
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  for (int sig : {SIGPIPE, SIGTERM, SIGINT, SIGHUP, SIGCHLD}) ::signal(sig, SIG_DFL);
  ::dup2(c.null_fd, 0);
  ::dup2(c.log_fd, 1);
  ::dup2(c.log_fd, 2);
  ::umask(kContainerUmask);
  if (const Identity* id = c.identity) {
    if (::syscall(SYS_setgroups, id->groups.size(), id->groups.data()) != 0) {
      report(c.error_fd, Stage::kSetgroups);
    }
    if (::syscall(SYS_setgid, id->gid) != 0) report(c.error_fd, Stage::kSetgid);
    if (::syscall(SYS_setuid, id->uid) != 0) report(c.error_fd, Stage::kSetuid);
  }
  if (c.no_new_privs && ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
    report(c.error_fd, Stage::kNoNewPrivs);
  }
  // Set after the identity change, which clears it.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != c.parent) ::_exit(127);
  if (::chdir(c.working_dir) != 0) report(c.error_fd, Stage::kChdir);
  // No inherited descriptor (API connections, other pods' logs) survives exec.
  if (::syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC) != 0) {
    for (int fd = 3; fd < kFdScanMax; ++fd) ::fcntl(fd, F_SETFD, FD_CLOEXEC);
  }
  ::execve(c.program.c_str(), c.argv.data(), c.envp.data());
  report(c.error_fd, Stage::kExec);
}

std::string identity_text(const Identity& id) {
  std::string groups;
  for (gid_t g : id.groups) groups += (groups.empty() ? "" : ",") + std::to_string(g);
  return "uid " + std::to_string(id.uid) + " gid " + std::to_string(id.gid) + " groups [" + groups +
         "]";
}

std::string failure_text(const ChildFailure& f, const SpawnSpec& spec, const std::string& program) {
  const std::string error = std::strerror(f.error);
  const std::string who = spec.identity ? identity_text(*spec.identity) : "the executor's user";
  switch (f.stage) {
    case Stage::kSetgroups:
    case Stage::kSetgid:
    case Stage::kSetuid: {
      const char* call = f.stage == Stage::kSetgroups ? "setgroups"
                         : f.stage == Stage::kSetgid  ? "setgid"
                                                      : "setuid";
      return std::string("cannot run as ") + who + ": " + call + ": " + error +
             (::geteuid() != 0 ? " (hb-local-kubelet must run as root to switch users)" : "");
    }
    case Stage::kNoNewPrivs:
      return "prctl(PR_SET_NO_NEW_PRIVS): " + error;
    case Stage::kChdir:
      return "working dir " + spec.working_dir + " as " + who + ": " + error +
             (f.error == EACCES ? " (the state dir and its parents must be searchable by the "
                                  "container's user)"
                                : "");
    case Stage::kExec:
      break;
  }
  return "exec " + program + " as " + who + " (working dir " + spec.working_dir + "): " + error;
}

}  // namespace

bool is_executable_file(const std::string& path) {
  return executable(path);
}

std::string find_on_path(const std::string& name, const std::string& path_list) {
  std::stringstream dirs(path_list);
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    if (dir.empty()) continue;
    std::string candidate = dir + "/" + name;
    if (executable(candidate)) return candidate;
  }
  return "";
}

SpawnSpec spawn_spec_for(const ContainerLaunch& launch) {
  SpawnSpec spec{launch.argv,     launch.env,   launch.working_dir,
                 launch.log_path, std::nullopt, launch.run_as.no_new_privs};
  if (launch.run_as.uid) {
    Identity id{static_cast<uid_t>(*launch.run_as.uid), static_cast<gid_t>(launch.run_as.gid), {}};
    for (int64_t group : launch.run_as.groups) id.groups.push_back(static_cast<gid_t>(group));
    spec.identity = std::move(id);
  }
  return spec;
}

Spawned spawn(const SpawnSpec& spec) {
  if (spec.argv.empty()) return {-1, "no command to run"};
  ChildSetup c;
  c.program = spec.argv[0];
  if (c.program.find('/') == std::string::npos) {
    std::string path;
    for (const auto& [name, value] : spec.env) {
      if (name == "PATH") path = value;
    }
    std::string found = find_on_path(c.program, path);
    if (found.empty()) {
      return {-1, "exec: \"" + c.program + "\": executable file not found in $PATH"};
    }
    c.program = found;
  }
  // Everything the child needs is prepared before fork: after it, only
  // async-signal-safe calls are allowed (the executor has many threads).
  std::vector<std::string> env_text;
  for (const auto& [name, value] : spec.env) env_text.push_back(name + "=" + value);
  for (const auto& a : spec.argv) c.argv.push_back(const_cast<char*>(a.c_str()));
  c.argv.push_back(nullptr);
  for (auto& e : env_text) c.envp.push_back(e.data());
  c.envp.push_back(nullptr);
  c.working_dir = spec.working_dir.c_str();
  c.identity = spec.identity ? &*spec.identity : nullptr;
  c.no_new_privs = spec.no_new_privs;

  c.log_fd = ::open(spec.log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, kLogFileMode);
  if (c.log_fd < 0) return {-1, "cannot open log " + spec.log_path + ": " + std::strerror(errno)};
  c.null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  int error_pipe[2];
  if (c.null_fd < 0 || ::pipe2(error_pipe, O_CLOEXEC) != 0) {
    const int saved = errno;
    ::close(c.log_fd);
    if (c.null_fd >= 0) ::close(c.null_fd);
    return {-1, std::string("cannot set up the process: ") + std::strerror(saved)};
  }
  c.error_fd = error_pipe[1];
  c.parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid == 0) run_child(c);
  const int fork_errno = errno;
  ::close(error_pipe[1]);
  ::close(c.log_fd);
  ::close(c.null_fd);
  if (pid < 0) {
    ::close(error_pipe[0]);
    return {-1, std::string("fork failed: ") + std::strerror(fork_errno)};
  }
  ChildFailure failure;
  ssize_t n;
  do {
    n = ::read(error_pipe[0], &failure, sizeof failure);
  } while (n < 0 && errno == EINTR);
  ::close(error_pipe[0]);
  if (n == static_cast<ssize_t>(sizeof failure)) {
    int status;
    ::waitpid(pid, &status, 0);
    return {-1, failure_text(failure, spec, c.program)};
  }
  return {pid, ""};
}

std::optional<int> try_wait(pid_t pid) {
  int status = 0;
  pid_t r;
  do {
    r = ::waitpid(pid, &status, WNOHANG);
  } while (r < 0 && errno == EINTR);
  if (r == pid) return status;
  // Nobody else reaps our children; should it happen, report exit code 255.
  if (r < 0 && errno == ECHILD) return 255 << 8;
  return std::nullopt;
}

void signal_group(pid_t pid, int sig) {
  if (pid > 0) ::kill(-pid, sig);
}

int kill_session(pid_t session_id) {
  if (session_id <= 0) return 0;
  int killed = 0;
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return 0;
  while (dirent* entry = ::readdir(proc)) {
    char* end = nullptr;
    const long pid = std::strtol(entry->d_name, &end, 10);
    if (end == entry->d_name || *end != '\0' || pid <= 0) continue;
    std::ifstream stat("/proc/" + std::string(entry->d_name) + "/stat");
    std::string text;
    std::getline(stat, text);
    const auto paren = text.rfind(')');
    if (paren == std::string::npos) continue;
    std::istringstream fields(text.substr(paren + 1));
    std::string state;
    long ppid = 0, pgrp = 0, session = 0;
    if (!(fields >> state >> ppid >> pgrp >> session)) continue;
    if (session == session_id && state != "Z") {
      ::kill(static_cast<pid_t>(pid), SIGKILL);
      ++killed;
    }
  }
  ::closedir(proc);
  return killed;
}

}  // namespace hb::local_kubelet
