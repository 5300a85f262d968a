// The IPv4 loopback address at `port` (0: any free port, for listeners),
// shared by the tests' raw sockets.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>

namespace hb::test_support {

inline sockaddr_in loopback(int port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return addr;
}

}  // namespace hb::test_support
