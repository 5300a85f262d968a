// A raw TCP client for tests that play a hostile HTTP client: it sends
// exactly the bytes given (half a head, a promise of a body never sent).
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <string>

#include "tests/support/loopback.h"

namespace hb::test_support {

// A blocking client socket; closes on destruction.
class RawClient {
 public:
  explicit RawClient(int port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr = loopback(port);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
    timeval tv{20, 0};  // a test that would hang fails instead
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  }
  ~RawClient() { ::close(fd_); }
  RawClient(const RawClient&) = delete;
  RawClient& operator=(const RawClient&) = delete;
  bool connected() const { return connected_; }
  void send(const std::string& data) { (void)!::send(fd_, data.data(), data.size(), MSG_NOSIGNAL); }
  // Reads until the peer closes (or the 20 s receive timeout).
  std::string read_all() {
    std::string out;
    char buf[4096];
    for (;;) {
      const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) return out;
      out.append(buf, static_cast<size_t>(n));
    }
  }
  // Reads one response with a Content-Length body (keep-alive).
  std::string read_response() {
    std::string out;
    char c;
    while (out.find("\r\n\r\n") == std::string::npos && ::recv(fd_, &c, 1, 0) == 1) out += c;
    const size_t at = out.find("content-length: ") != std::string::npos
                          ? out.find("content-length: ")
                          : out.find("Content-Length: ");
    size_t length = at == std::string::npos ? 0 : std::stoul(out.substr(at + 16));
    while (length > 0 && ::recv(fd_, &c, 1, 0) == 1) {
      out += c;
      --length;
    }
    return out;
  }

 private:
  int fd_ = -1;
  bool connected_ = false;
};

inline int status_of(const std::string& response) {
  if (response.rfind("HTTP/1.1 ", 0) != 0) return 0;
  return std::stoi(response.substr(9, 3));
}

}  // namespace hb::test_support
