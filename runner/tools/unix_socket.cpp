#include "runner/tools/unix_socket.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <functional>

namespace hb::tools {
namespace {

// Calls `use` with an address for `path`: the path itself when it fits,
// else /proc/self/fd/N/NAME through its directory (kept open meanwhile).
int with_address(const std::string& path, const std::function<int(const sockaddr_un&)>& use) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::string reachable = path;
  int dir_fd = -1;
  if (path.size() >= sizeof address.sun_path) {
    const std::size_t slash = path.find_last_of('/');
    const std::string dir = slash == std::string::npos ? "." : path.substr(0, slash);
    dir_fd = ::open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (dir_fd < 0) return -1;
    reachable = "/proc/self/fd/" + std::to_string(dir_fd) + "/" + path.substr(slash + 1);
  }
  int result = -1;
  if (reachable.size() < sizeof address.sun_path) {
    std::memcpy(address.sun_path, reachable.c_str(), reachable.size() + 1);
    result = use(address);
  } else {
    errno = ENAMETOOLONG;
  }
  const int saved = errno;
  if (dir_fd >= 0) ::close(dir_fd);
  errno = saved;
  return result;
}

}  // namespace

int connect_unix(const std::string& path) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  const int connected = with_address(path, [&](const sockaddr_un& address) {
    return ::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address);
  });
  if (connected != 0) {
    const int saved = errno;
    ::close(fd);
    errno = saved;
    return -1;
  }
  return fd;
}

int listen_unix(const std::string& path, int backlog, unsigned mode, std::string& error) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ::unlink(path.c_str());  // a stale socket from an earlier start
  const bool bound =
      fd >= 0 && with_address(path, [&](const sockaddr_un& address) {
                   return ::bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address);
                 }) == 0;
  if (!bound || ::chmod(path.c_str(), mode) != 0 || ::listen(fd, backlog) != 0) {
    error = "cannot listen on " + path + ": " + std::strerror(errno);
    if (fd >= 0) ::close(fd);
    return -1;
  }
  return fd;
}

}  // namespace hb::tools
