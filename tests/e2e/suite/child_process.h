// A helper process of the end-to-end suite (the fake model server, the local
// pod executor): started with its output in a log file, stopped with SIGTERM
// and then SIGKILL, and killed with the test binary if that dies first.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace hb::testing {

class ChildProcess {
 public:
  ChildProcess() = default;
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  ~ChildProcess() { stop(std::chrono::seconds(5)); }

  void start(std::vector<std::string> argv, const std::string& log_path) {
    if (argv.empty()) throw std::invalid_argument("ChildProcess: empty argv");
    log_path_ = log_path;
    std::vector<char*> c;
    for (auto& a : argv) c.push_back(a.data());
    c.push_back(nullptr);
    const int fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd < 0) throw std::runtime_error("cannot open " + log_path);
    pid_ = fork();
    if (pid_ == 0) {
      // Only async-signal-safe calls here: the parent has threads.
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      dup2(fd, 1);
      dup2(fd, 2);
      execv(c[0], c.data());
      _exit(127);
    }
    ::close(fd);
    if (pid_ < 0) throw std::runtime_error("fork failed for " + argv[0]);
  }

  // SIGTERM, then SIGKILL when it is still there after `grace`.
  void stop(std::chrono::milliseconds grace) {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGTERM);
    const auto deadline = std::chrono::steady_clock::now() + grace;
    int status = 0;
    while (waitpid(pid_, &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() >= deadline) {
        ::kill(pid_, SIGKILL);
        waitpid(pid_, &status, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    pid_ = -1;
  }

  bool alive() {
    if (pid_ <= 0) return false;
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) != pid_) return true;
    pid_ = -1;
    return false;
  }
  pid_t pid() const { return pid_; }
  const std::string& log_path() const { return log_path_; }

 private:
  pid_t pid_ = -1;
  std::string log_path_;
};

}  // namespace hb::testing
