// A loopback HTTP/1.1 server for tests of the client's kept-alive
// connections: each accepted connection plays its own script, one step per
// request read (answer it "ok" and keep the connection, or close it without
// a word), and every request line is recorded. A connection whose script
// ends stays open, idle, until the server is destroyed.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/loopback.h"

namespace hb::test_support {

class KeepAliveServer {
 public:
  enum class Step { kAnswer, kDrop };

  explicit KeepAliveServer(std::vector<std::vector<Step>> scripts) : scripts_(std::move(scripts)) {
    fd_ = listen_on_loopback(4, port_, "keep-alive server");
    thread_ = std::thread([this] { serve(); });
  }
  ~KeepAliveServer() {
    ::shutdown(fd_, SHUT_RDWR);
    ::close(fd_);
    thread_.join();
    for (int fd : open_) ::close(fd);
  }
  std::string base() const { return "http://127.0.0.1:" + std::to_string(port_); }
  // "METHOD /target" of every request read, in order.
  std::vector<std::string> requests() const {
    std::lock_guard lock(mutex_);
    return requests_;
  }
  int connections() const {
    std::lock_guard lock(mutex_);
    return connections_;
  }

 private:
  void serve() {
    for (const std::vector<Step>& script : scripts_) {
      const int conn = ::accept(fd_, nullptr, nullptr);
      if (conn < 0) return;
      {
        std::lock_guard lock(mutex_);
        ++connections_;
      }
      bool open = true;
      for (Step step : script) {
        if (!read_request(conn)) break;
        if (step == Step::kDrop) {
          ::close(conn);
          open = false;
          break;
        }
        const std::string answer = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
        ::send(conn, answer.data(), answer.size(), MSG_NOSIGNAL);
      }
      if (open) open_.push_back(conn);
    }
  }

  // Reads one request's head and its Content-Length body; records its line.
  bool read_request(int conn) {
    std::string in;
    char buffer[4096];
    std::size_t head_end;
    while ((head_end = in.find("\r\n\r\n")) == std::string::npos) {
      const ssize_t n = ::recv(conn, buffer, sizeof(buffer), 0);
      if (n <= 0) return false;
      in.append(buffer, static_cast<std::size_t>(n));
    }
    std::size_t body = 0;
    if (auto at = in.find("Content-Length: "); at != std::string::npos && at < head_end) {
      body = std::stoul(in.substr(at + 16));
    }
    while (in.size() < head_end + 4 + body) {
      const ssize_t n = ::recv(conn, buffer, sizeof(buffer), 0);
      if (n <= 0) return false;
      in.append(buffer, static_cast<std::size_t>(n));
    }
    const std::string line = in.substr(0, in.find(" HTTP/1.1"));
    std::lock_guard lock(mutex_);
    requests_.push_back(line);
    return true;
  }

  std::vector<std::vector<Step>> scripts_;
  int fd_ = -1;
  int port_ = 0;
  std::thread thread_;
  std::vector<int> open_;
  mutable std::mutex mutex_;
  std::vector<std::string> requests_;
  int connections_ = 0;
};

}  // namespace hb::test_support
