// A raw TCP server for tests that play a hostile HTTP server, the
// counterpart of raw_client.h: it answers exactly the bytes given (a
// Content-Length it never meets, a body cut short, chunks of any size).
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <stdexcept>
#include <string>
#include <thread>

#include "tests/support/loopback.h"

namespace hb::test_support {

// One connection answered with `raw` (status line, headers and body as
// written) once its request's headers are in; then the socket closes.
class RawServer {
 public:
  explicit RawServer(std::string raw) : raw_(std::move(raw)) {
    fd_ = listen_on_loopback(1, port_, "raw server");
    thread_ = std::thread([this] { answer_one(); });
  }
  ~RawServer() {
    ::shutdown(fd_, SHUT_RDWR);
    ::close(fd_);
    thread_.join();
  }
  std::string base() const { return "http://127.0.0.1:" + std::to_string(port_); }

 private:
  void answer_one() {
    const int conn = ::accept(fd_, nullptr, nullptr);
    if (conn < 0) return;
    std::string request;
    char buffer[4096];
    while (request.find("\r\n\r\n") == std::string::npos) {
      const ssize_t n = ::recv(conn, buffer, sizeof(buffer), 0);
      if (n <= 0) break;
      request.append(buffer, static_cast<size_t>(n));
    }
    for (size_t sent = 0; sent < raw_.size();) {
      const ssize_t n = ::send(conn, raw_.data() + sent, raw_.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) break;
      sent += static_cast<size_t>(n);
    }
    ::close(conn);
  }

  std::string raw_;
  int fd_ = -1;
  int port_ = 0;
  std::thread thread_;
};

}  // namespace hb::test_support
