#include "runner/transcript_file.h"

#include <openssl/evp.h>
#include <zlib.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace hb::runner {

namespace {

namespace fs = std::filesystem;

constexpr const char* kGzipMode = "wb6";  // zlib level 6: its default trade-off

// SHA-256 of a file, lowercase hex; empty when it cannot be read.
std::string file_sha256(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  EVP_DigestInit_ex(ctx, EVP_sha256(), nullptr);
  std::array<char, 64 * 1024> buffer{};
  while (in) {
    in.read(buffer.data(), buffer.size());
    if (in.gcount() > 0) EVP_DigestUpdate(ctx, buffer.data(), static_cast<size_t>(in.gcount()));
  }
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int length = 0;
  EVP_DigestFinal_ex(ctx, digest.data(), &length);
  EVP_MD_CTX_free(ctx);
  if (in.bad()) return {};
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  for (unsigned int i = 0; i < length; ++i) {
    hex += kHex[digest[i] >> 4];
    hex += kHex[digest[i] & 0xf];
  }
  return hex;
}

bool safe_file_stem(const std::string& name) {
  return !name.empty() && name != "." && name != ".." &&
         std::all_of(name.begin(), name.end(), [](char c) {
           return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.';
         });
}

}  // namespace

TranscriptFile::TranscriptFile(std::string path, std::size_t bytes_max)
    : path_(std::move(path)), bytes_max_(bytes_max) {
  std::error_code ignored;
  fs::create_directories(fs::path(path_).parent_path(), ignored);
  gz_ = gzopen(path_.c_str(), kGzipMode);
  if (gz_ == nullptr)
    stop("the transcript file could not be created: " + std::string(std::strerror(errno)));
}

TranscriptFile::~TranscriptFile() {
  if (gz_ != nullptr) gzclose(static_cast<gzFile>(gz_));
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
  std::error_code error;
  if (!fs::is_regular_file(path_, error)) return std::nullopt;
  const auto size = fs::file_size(path_, error);
  if (error) return std::nullopt;
  const std::string sha = file_sha256(path_);
  if (sha.empty()) return std::nullopt;
  return api::TranscriptRecord{static_cast<int64_t>(size), sha, true, truncated_, note_};
}

std::string transcript_path(const std::string& dir, const std::string& run_name) {
  if (dir.empty() || !safe_file_stem(run_name)) return {};
  return (fs::path(dir) / (run_name + api::kTranscriptFileSuffix)).string();
}

std::size_t trim_transcripts(const std::string& dir, const std::vector<std::string>& keep) {
  std::size_t deleted = 0;
  std::error_code error;
  const std::string suffix = api::kTranscriptFileSuffix;
  try {
    for (const auto& entry : fs::directory_iterator(dir, error)) {
      const std::string name = entry.path().filename().string();
      if (name.size() <= suffix.size() || !name.ends_with(suffix)) continue;
      const std::string run = name.substr(0, name.size() - suffix.size());
      if (std::find(keep.begin(), keep.end(), run) != keep.end()) continue;
      std::error_code ignored;
      if (entry.is_regular_file(ignored) && fs::remove(entry.path(), ignored)) ++deleted;
    }
  } catch (const fs::filesystem_error&) {
    // A directory that changed under the walk: the next run trims again.
  }
  return deleted;
}

}  // namespace hb::runner
