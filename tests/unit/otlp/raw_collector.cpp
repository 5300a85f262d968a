#include "tests/unit/otlp/raw_collector.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <stdexcept>

namespace hb::otlp::testing {
namespace {

constexpr int kPollMs = 20;
constexpr std::size_t kReadBytes = 64 * 1024;

bool readable(int fd, int timeout_ms) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, timeout_ms) > 0;
}

}  // namespace

RawCollector::RawCollector(Mode mode) : mode_(mode) {
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  if (listen_fd_ < 0 || ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&address), length) != 0 ||
      ::listen(listen_fd_, 16) != 0 ||
      ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    throw std::runtime_error("RawCollector: cannot listen on 127.0.0.1");
  }
  port_ = ntohs(address.sin_port);
  thread_ = std::thread([this] { serve(); });
}

RawCollector::~RawCollector() {
  stop_ = true;
  thread_.join();
  ::close(listen_fd_);
}

void RawCollector::serve() {
  while (!stop_) {
    if (!readable(listen_fd_, kPollMs)) continue;
    const int fd = ::accept(listen_fd_, nullptr, nullptr);
    if (fd < 0) continue;
    ++connections_;
    answer(fd);  // one client at a time: the exporter sends one request at a time
    ::close(fd);
  }
}

void RawCollector::answer(int fd) {
  char buffer[kReadBytes];
  if (readable(fd, 1000)) (void)!::read(fd, buffer, sizeof buffer);
  if (mode_ == Mode::kGarbage) {
    static constexpr char kGarbage[] = "\x16\x03\x01garbage\r\n\r\nHTTP/9.9 7 nope\r\n\r\n";
    (void)!::send(fd, kGarbage, sizeof kGarbage - 1, MSG_NOSIGNAL);
    return;
  }
  static constexpr char kHead[] = "HTTP/1.1 200 OK\r\nContent-Length: 60000\r\n\r\n";
  if (::send(fd, kHead, sizeof kHead - 1, MSG_NOSIGNAL) < 0) return;
  while (!stop_) {
    if (readable(fd, static_cast<int>(kDripInterval.count()))) {
      if (::read(fd, buffer, sizeof buffer) <= 0) return;  // the client gave up
    }
    if (::send(fd, "x", 1, MSG_NOSIGNAL) < 0) return;
  }
}

}  // namespace hb::otlp::testing
