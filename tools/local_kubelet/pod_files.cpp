#include "tools/local_kubelet/pod_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <system_error>

namespace hb::local_kubelet {
namespace fs = std::filesystem;

namespace {

constexpr mode_t kNewDirMode = 0700;  // until its planned owner and mode are set
constexpr mode_t kSearchableBits = 0111;

[[noreturn]] void fail(const std::string& what, const std::string& path) {
  throw std::runtime_error(what + " " + path + ": " + std::strerror(errno));
}

// Only root can give a file away; otherwise the process start reports the
// identity it could not take.
bool can_chown() {
  return ::geteuid() == 0;
}

uid_t uid_of(const Owner& o) {
  return o.uid < 0 ? static_cast<uid_t>(-1) : uid_t(o.uid);
}
gid_t gid_of(const Owner& o) {
  return o.gid < 0 ? static_cast<gid_t>(-1) : gid_t(o.gid);
}
bool owned(const Owner& o) {
  return o.uid >= 0 || o.gid >= 0;
}

void make_dir(const DirToMake& d) {
  struct stat st {};
  if (::lstat(d.path.c_str(), &st) == 0) {
    if (!S_ISDIR(st.st_mode)) {
      errno = ENOTDIR;
      fail("cannot create", d.path);
    }
  } else if (::mkdir(d.path.c_str(), kNewDirMode) != 0 && errno != EEXIST) {
    fail("cannot create", d.path);
  }
  if (owned(d.owner) && can_chown() && ::lchown(d.path.c_str(), uid_of(d.owner), gid_of(d.owner))) {
    fail("cannot chown", d.path);
  }
  // After the chown, which may clear set-id bits.
  if (::chmod(d.path.c_str(), static_cast<mode_t>(d.mode)) != 0) fail("cannot chmod", d.path);
}

void write_file(const FileToWrite& f) {
  const int fd =
      ::open(f.path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, kNewDirMode);
  if (fd < 0) fail("cannot write", f.path);
  std::size_t done = 0;
  while (done < f.content.size()) {
    const ssize_t n = ::write(fd, f.content.data() + done, f.content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ::close(fd);
      fail("cannot write", f.path);
    }
    done += static_cast<std::size_t>(n);
  }
  if ((owned(f.owner) && can_chown() && ::fchown(fd, uid_of(f.owner), gid_of(f.owner)) != 0) ||
      ::fchmod(fd, static_cast<mode_t>(f.mode)) != 0) {
    ::close(fd);
    fail("cannot set the owner or mode of", f.path);
  }
  ::close(fd);
}

// A regular file, opened without following a symlink or blocking on a FIFO.
int open_regular(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return -1;
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return -1;
  }
  return fd;
}

std::string read_at(int fd, off_t offset, std::size_t max_bytes) {
  std::string out(max_bytes, '\0');
  std::size_t got = 0;
  while (got < max_bytes) {
    const ssize_t n = ::pread(fd, out.data() + got, max_bytes - got, offset + off_t(got));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<std::size_t>(n);
  }
  out.resize(got);
  return out;
}

}  // namespace

std::string pod_dir_for(const std::string& state_dir, const std::string& uid) {
  return state_dir + "/pods/" + uid;
}

void materialize(const LocalLaunch& launch) {
  if (!launch.dirs.empty()) {
    std::error_code ec;
    const fs::path parent = fs::path(launch.dirs.front().path).parent_path();
    fs::create_directories(parent, ec);
    if (ec) throw std::runtime_error("cannot create " + parent.string() + ": " + ec.message());
    // <state>/pods: container users pass through it, whatever our umask.
    struct stat st {};
    if (::stat(parent.c_str(), &st) == 0 && st.st_uid == ::geteuid() &&
        (st.st_mode & kSearchableBits) != kSearchableBits) {
      ::chmod(parent.c_str(), (st.st_mode & 07777) | kSearchableBits);
    }
  }
  for (const auto& dir : launch.dirs) make_dir(dir);
  for (const auto& file : launch.files) write_file(file);
}

void remove_secrets(const std::string& pod_dir) {
  std::error_code ec;
  fs::remove_all(pod_dir + "/volumes", ec);
  for (fs::directory_iterator it(pod_dir + "/containers", ec), end; !ec && it != end;
       it.increment(ec)) {
    std::error_code ignored;
    fs::remove(it->path() / "kubeconfig", ignored);
  }
}

std::string read_tail(const std::string& path, std::size_t max_bytes) {
  const int fd = open_regular(path);
  if (fd < 0) return "";
  struct stat st {};
  ::fstat(fd, &st);
  const off_t size = st.st_size;
  const off_t start = size > off_t(max_bytes) ? size - off_t(max_bytes) : 0;
  std::string out = read_at(fd, start, static_cast<std::size_t>(size - start));
  ::close(fd);
  return out;
}

std::string read_head(const std::string& path, std::size_t max_bytes) {
  const int fd = open_regular(path);
  if (fd < 0) return "";
  std::string out = read_at(fd, 0, max_bytes);
  ::close(fd);
  return out;
}

}  // namespace hb::local_kubelet
