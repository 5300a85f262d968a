// Unix stream sockets at any path length. sun_path holds 107 bytes; a
// kubelet's volume paths can be longer (a Pod's uid, the volume name...), so
// a long path is reached through its directory opened with O_PATH:
// "/proc/self/fd/N/NAME" resolves to the same place and is short.
#pragma once

#include <string>

namespace hb::tools {

// A connected socket, or -1 with errno set.
int connect_unix(const std::string& path);

// A listening socket at `path` (a stale file there removed first, the socket
// made mode `mode`), or -1 and `error` says why.
int listen_unix(const std::string& path, int backlog, unsigned mode, std::string& error);

}  // namespace hb::tools
