#include "runner/transcript_file.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <filesystem>

namespace hb::runner {

namespace {

namespace fs = std::filesystem;

constexpr const char* kGzipMode = "wb6";  // zlib level 6: its default trade-off
constexpr mode_t kTranscriptFileMode = 0640;

// SHA-256 of an open file from its start, lowercase hex; empty when it cannot be read.
std::string fd_sha256(int fd) {
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  EVP_DigestInit_ex(ctx, EVP_sha256(), nullptr);
  std::array<char, 64 * 1024> buffer{};
  off_t offset = 0;
  ssize_t n = 0;
  while ((n = ::pread(fd, buffer.data(), buffer.size(), offset)) > 0) {
    EVP_DigestUpdate(ctx, buffer.data(), static_cast<size_t>(n));
    offset += n;
  }
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int length = 0;
  EVP_DigestFinal_ex(ctx, digest.data(), &length);
  EVP_MD_CTX_free(ctx);
  if (n < 0) return {};
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  for (unsigned int i = 0; i < length; ++i) {
    hex += kHex[digest[i] >> 4];
    hex += kHex[digest[i] & 0xf];
  }
  return hex;
}

// A new file NAME in DIR that no link planted there can redirect: the
// directory itself and the file are opened without following a symlink,
// and whatever held the name before is unlinked (never written through).
int create_unfollowed(const std::string& dir, const std::string& name, std::string& error) {
  ::mkdir(dir.c_str(), 0750);  // EEXIST is the usual case; the open below tells the rest
  const int dir_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dir_fd < 0) {
    error = "directory " + dir + ": " + std::strerror(errno);
    return -1;
  }
  ::unlinkat(dir_fd, name.c_str(), 0);
  const int fd = ::openat(dir_fd, name.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                          kTranscriptFileMode);
  if (fd < 0) error = std::strerror(errno);
  ::close(dir_fd);
  return fd;
}

bool safe_file_stem(const std::string& name) {
  return !name.empty() && name != "." && name != ".." &&
         std::all_of(name.begin(), name.end(), [](char c) {
           return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.';
         });
}

}  // namespace

TranscriptFile::TranscriptFile(const std::string& dir, const std::string& name,
                               std::size_t bytes_max)
    : bytes_max_(bytes_max) {
  std::string error;
  const int fd = create_unfollowed(dir, name, error);
  if (fd < 0) {
    stop("the transcript file could not be created: " + error);
    return;
  }
  adopt(fd);
}

TranscriptFile::TranscriptFile(int fd, std::size_t bytes_max) : bytes_max_(bytes_max) {
  adopt(fd);
}

void TranscriptFile::adopt(int fd) {
  read_fd_ = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);  // kept past gzclose, to hash what was written
  gz_ = gzdopen(fd, kGzipMode);
  if (gz_ == nullptr) {
    ::close(fd);
    stop("the transcript file could not be opened for gzip");
  }
}

TranscriptFile::~TranscriptFile() {
  if (gz_ != nullptr) gzclose(static_cast<gzFile>(gz_));
  if (read_fd_ >= 0) ::close(read_fd_);
}

void TranscriptFile::stop(std::string why) {
  if (!truncated_) note_ = std::move(why);
  truncated_ = true;
}

void TranscriptFile::write_line(std::string_view line) {
  if (gz_ == nullptr || truncated_) return;
  if (written_ + line.size() + 1 > bytes_max_) {
    stop("the transcript reached its bound of " + std::to_string(bytes_max_) +
         " bytes; the rest is in the container log only");
    return;
  }
  std::string text(line);
  text += '\n';
  const int wrote =
      gzwrite(static_cast<gzFile>(gz_), text.data(), static_cast<unsigned>(text.size()));
  if (wrote != static_cast<int>(text.size())) {
    int zerr = 0;
    const char* why = gzerror(static_cast<gzFile>(gz_), &zerr);
    stop("a write to the transcript file failed (" +
         std::string(zerr == Z_ERRNO ? std::strerror(errno) : why) + "); it stops there");
    return;
  }
  written_ += text.size();
}

std::optional<api::TranscriptRecord> TranscriptFile::finish() {
  if (gz_ == nullptr) return std::nullopt;
  const int closed = gzclose(static_cast<gzFile>(gz_));
  gz_ = nullptr;
  if (closed != Z_OK)
    stop("the transcript file could not be closed whole (the volume may be full)");
  // Only a regular file is hashed (a device such as /dev/full reads forever).
  struct stat info {};
  if (read_fd_ < 0 || ::fstat(read_fd_, &info) != 0 || !S_ISREG(info.st_mode)) return std::nullopt;
  const std::string sha = fd_sha256(read_fd_);
  if (sha.empty()) return std::nullopt;
  return api::TranscriptRecord{static_cast<int64_t>(info.st_size), sha, true, truncated_, note_};
}

bool transcript_name_ok(const std::string& run_name) {
  return safe_file_stem(run_name);
}

std::string transcript_file_name(const std::string& run_name) {
  return run_name + api::kTranscriptFileSuffix;
}

std::size_t trim_transcripts(const std::string& dir, const std::vector<std::string>& keep) {
  std::size_t deleted = 0;
  const std::string suffix = api::kTranscriptFileSuffix;
  // A directory that cannot be read, or changes under the walk, ends it: the next run trims again.
  std::error_code error;
  for (fs::directory_iterator it(dir, error), end; !error && it != end; it.increment(error)) {
    const std::string name = it->path().filename().string();
    if (name.size() <= suffix.size() || !name.ends_with(suffix)) continue;
    const std::string run = name.substr(0, name.size() - suffix.size());
    if (std::find(keep.begin(), keep.end(), run) != keep.end()) continue;
    std::error_code ignored;
    if (it->is_regular_file(ignored) && fs::remove(it->path(), ignored)) ++deleted;
  }
  return deleted;
}

}  // namespace hb::runner
