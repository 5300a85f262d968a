// A TCP proxy for tests that need a network that hangs: it forwards bytes
// between clients and one upstream port until pause(), after which it keeps
// every connection open and moves nothing (a partition that neither resets
// nor refuses, the worst case for a client's timeouts).
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

#include "tests/support/loopback.h"

namespace hb::test_support {

class TcpProxy {
 public:
  explicit TcpProxy(int upstream_port) : upstream_port_(upstream_port) {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr = loopback(0);
    ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    ::listen(listen_fd_, 64);
    socklen_t len = sizeof addr;
    ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    acceptor_ = std::thread([this] { accept_loop(); });
  }
  ~TcpProxy() {
    stopping_ = true;
    ::shutdown(listen_fd_, SHUT_RDWR);
    ::close(listen_fd_);
    acceptor_.join();
    std::lock_guard lock(mutex_);
    for (std::thread& t : pumps_) t.join();
  }
  TcpProxy(const TcpProxy&) = delete;
  TcpProxy& operator=(const TcpProxy&) = delete;

  int port() const { return port_; }
  void pause() { paused_ = true; }
  // Bytes moved from clients to upstream since pause() (0 while paused).
  long forwarded_after_pause() const { return after_pause_; }

 private:
  void accept_loop() {
    while (!stopping_) {
      const int client = ::accept(listen_fd_, nullptr, nullptr);
      if (client < 0) return;
      const int upstream = ::socket(AF_INET, SOCK_STREAM, 0);
      sockaddr_in addr = loopback(upstream_port_);
      if (::connect(upstream, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
        ::close(client);
        ::close(upstream);
        continue;
      }
      std::lock_guard lock(mutex_);
      pumps_.emplace_back([this, client, upstream] { pump(client, upstream); });
    }
  }

  // Both directions of one connection; holds everything while paused.
  void pump(int client, int upstream) {
    char buf[16384];
    pollfd fds[2] = {{client, POLLIN, 0}, {upstream, POLLIN, 0}};
    while (!stopping_) {
      if (paused_) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        continue;
      }
      if (::poll(fds, 2, 50) <= 0) continue;
      for (int i = 0; i < 2; ++i) {
        if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
        const ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
        if (n <= 0) {
          ::close(client);
          ::close(upstream);
          return;
        }
        if (paused_ && i == 0) after_pause_ += n;
        (void)!::write(fds[1 - i].fd, buf, static_cast<size_t>(n));
      }
    }
    ::close(client);
    ::close(upstream);
  }

  int upstream_port_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> paused_{false}, stopping_{false};
  std::atomic<long> after_pause_{0};
  std::thread acceptor_;
  std::mutex mutex_;
  std::vector<std::thread> pumps_;
};

}  // namespace hb::test_support
