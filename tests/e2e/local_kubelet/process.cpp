#include "tests/e2e/local_kubelet/process.h"

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
constexpr int kFdScanMax = 65536;  // fallback when close_range is unavailable

bool executable(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

}  // namespace

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

Spawned spawn(const SpawnSpec& spec) {
  if (spec.argv.empty()) return {-1, "no command to run"};
  std::string program = spec.argv[0];
  if (program.find('/') == std::string::npos) {
    std::string path;
    for (const auto& [name, value] : spec.env) {
      if (name == "PATH") path = value;
    }
    std::string found = find_on_path(program, path);
    if (found.empty()) {
      return {-1, "exec: \"" + program + "\": executable file not found in $PATH"};
    }
    program = found;
  }
  // Everything the child needs is prepared before fork: after it, only
  // async-signal-safe calls are allowed (the executor has many threads).
  std::vector<std::string> env_text;
  for (const auto& [name, value] : spec.env) env_text.push_back(name + "=" + value);
  std::vector<char*> argv, envp;
  for (const auto& a : spec.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  for (auto& e : env_text) envp.push_back(e.data());
  envp.push_back(nullptr);

  const int log_fd =
      ::open(spec.log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, kLogFileMode);
  if (log_fd < 0) return {-1, "cannot open log " + spec.log_path + ": " + std::strerror(errno)};
  const int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  int error_pipe[2];
  if (null_fd < 0 || ::pipe2(error_pipe, O_CLOEXEC) != 0) {
    const int saved = errno;
    ::close(log_fd);
    if (null_fd >= 0) ::close(null_fd);
    return {-1, std::string("cannot set up the process: ") + std::strerror(saved)};
  }
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::setsid();
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    for (int sig : {SIGPIPE, SIGTERM, SIGINT, SIGHUP, SIGCHLD}) ::signal(sig, SIG_DFL);
    ::dup2(null_fd, 0);
    ::dup2(log_fd, 1);
    ::dup2(log_fd, 2);
    int err = 0;
    if (::chdir(spec.working_dir.c_str()) != 0) {
      err = errno;
    } else {
      // No inherited descriptor (API connections, other pods' logs) survives exec.
      if (::syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC) != 0) {
        for (int fd = 3; fd < kFdScanMax; ++fd) ::fcntl(fd, F_SETFD, FD_CLOEXEC);
      }
      ::execve(program.c_str(), argv.data(), envp.data());
      err = errno;
    }
    ssize_t ignored = ::write(error_pipe[1], &err, sizeof err);
    (void)ignored;
    ::_exit(127);
  }
  const int fork_errno = errno;
  ::close(error_pipe[1]);
  ::close(log_fd);
  ::close(null_fd);
  if (pid < 0) {
    ::close(error_pipe[0]);
    return {-1, std::string("fork failed: ") + std::strerror(fork_errno)};
  }
  int child_errno = 0;
  ssize_t n;
  do {
    n = ::read(error_pipe[0], &child_errno, sizeof child_errno);
  } while (n < 0 && errno == EINTR);
  ::close(error_pipe[0]);
  if (n > 0) {
    int status;
    ::waitpid(pid, &status, 0);
    return {-1, "exec " + program + " (working dir " + spec.working_dir +
                    "): " + std::strerror(child_errno)};
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
