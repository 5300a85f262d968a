// The full transcript of a heartbeat, one JSON object per line on stdout:
// {"time": RFC 3339, "event": "...", ...}. Never carries the API key (the
// loop never sees it).
#pragma once

#include <mutex>
#include <nlohmann/json.hpp>
#include <ostream>
#include <vector>

#include "runner/clock.h"
#include "runner/log_tail.h"
#include "runner/transcript_file.h"

namespace hb::runner {

class Transcript {
 public:
  virtual ~Transcript() = default;
  virtual void emit(nlohmann::json event) = 0;
};

class JsonLinesTranscript final : public Transcript {
 public:
  JsonLinesTranscript(std::ostream& out, const Clock& clock) : out_(out), clock_(clock) {}
  void emit(nlohmann::json event) override;
  // Each line also goes to `tail` (the result's stdoutExcerpt) and, while
  // attached, to `file` (the stored transcript). Either may be null.
  void set_taps(LogTail* tail, TranscriptFile* file);

 private:
  std::ostream& out_;
  const Clock& clock_;
  std::mutex mutex_;
  LogTail* tail_ = nullptr;
  TranscriptFile* file_ = nullptr;
};

// Keeps events in memory (tests, and `--transcript=none`).
class MemoryTranscript final : public Transcript {
 public:
  void emit(nlohmann::json event) override;
  std::vector<nlohmann::json> events() const;
  // Events whose "event" equals name.
  std::vector<nlohmann::json> events(const std::string& name) const;

 private:
  mutable std::mutex mutex_;
  std::vector<nlohmann::json> events_;
};

}  // namespace hb::runner
