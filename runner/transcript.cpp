#include "runner/transcript.h"

#include "api/rfc3339.h"
#include "runner/wire_util.h"

namespace hb::runner {

void JsonLinesTranscript::emit(nlohmann::json event) {
  nlohmann::json line = {{"time", api::format_rfc3339_millis(clock_.now())}};
  line.update(event);
  std::string text = dump_json(line);
  std::lock_guard lock(mutex_);
  out_ << text << '\n';
  out_.flush();
  if (tail_ != nullptr) {
    tail_->append(text);
    tail_->append("\n");
  }
  if (file_ != nullptr) file_->write_line(text);
}

void JsonLinesTranscript::set_taps(LogTail* tail, TranscriptFile* file) {
  std::lock_guard lock(mutex_);
  tail_ = tail;
  file_ = file;
}

void MemoryTranscript::emit(nlohmann::json event) {
  std::lock_guard lock(mutex_);
  events_.push_back(std::move(event));
}

std::vector<nlohmann::json> MemoryTranscript::events() const {
  std::lock_guard lock(mutex_);
  return events_;
}

std::vector<nlohmann::json> MemoryTranscript::events(const std::string& name) const {
  std::lock_guard lock(mutex_);
  std::vector<nlohmann::json> out;
  for (const auto& event : events_) {
    if (event.value("event", std::string()) == name) out.push_back(event);
  }
  return out;
}

}  // namespace hb::runner
