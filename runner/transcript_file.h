// The full transcript of a heartbeat on the Agent's archival volume: one
// gzip file per run (DIR/RUN.jsonl.gz), at most api::kTranscriptBytesMax
// uncompressed bytes. A full volume or the bound cuts it with a note; it
// never fails the run. finish() closes it and says its size and SHA-256,
// which the result carries so the file can be checked later.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/run_result.h"

namespace hb::runner {

class TranscriptFile {
 public:
  // Creates DIR/NAME afresh, following no symlink (the volume is one the
  // agent's tools may have written); when it cannot, `note()` says why and
  // every write is dropped.
  TranscriptFile(const std::string& dir, const std::string& name,
                 std::size_t bytes_max = api::kTranscriptBytesMax);
  // Writes to an open file (read-write, so finish() can hash it); owns `fd`.
  explicit TranscriptFile(int fd, std::size_t bytes_max = api::kTranscriptBytesMax);
  ~TranscriptFile();
  TranscriptFile(const TranscriptFile&) = delete;
  TranscriptFile& operator=(const TranscriptFile&) = delete;

  // One line (the newline is added). Past the bound or after a failed write
  // nothing more is written.
  void write_line(std::string_view line);
  // Closes the file; its record, or none when it could not be written at all.
  std::optional<api::TranscriptRecord> finish();
  // Why the transcript is incomplete or missing; empty when it is whole.
  const std::string& note() const { return note_; }

 private:
  void stop(std::string why);
  void adopt(int fd);

  int read_fd_ = -1;
  std::size_t bytes_max_;
  void* gz_ = nullptr;  // gzFile
  std::size_t written_ = 0;
  bool truncated_ = false;
  std::string note_;
};

// Whether a run name can be a file name (a name of Kubernetes's never
// contains '/'), and the name of its transcript file.
bool transcript_name_ok(const std::string& run_name);
std::string transcript_file_name(const std::string& run_name);

// Deletes DIR/NAME.jsonl.gz for every NAME not in `keep` (the runs the
// operator still keeps); other files are left alone. Returns how many were
// deleted; errors are skipped (the next run tries again).
std::size_t trim_transcripts(const std::string& dir, const std::vector<std::string>& keep);

}  // namespace hb::runner
