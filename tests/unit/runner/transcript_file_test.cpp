// The stored transcript never fails a run: a full volume or the bound cuts
// it with a note.
#include "runner/transcript_file.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <random>

namespace hb::runner {
namespace {

TEST(TranscriptFile, AFullVolumeCutsTheTranscriptWithANote) {
  // /dev/full takes the open and refuses every write with ENOSPC.
  TranscriptFile file("/dev/full");
  std::mt19937 random(7);  // incompressible lines: zlib's buffer fills and is written
  for (int i = 0; i < 200; ++i) {
    std::string line(1000, ' ');
    for (char& c : line) c = static_cast<char>('!' + random() % 90);
    file.write_line(line);
  }
  const auto record = file.finish();
  EXPECT_NE(file.note().find("No space left on device"), std::string::npos) << file.note();
  EXPECT_FALSE(record);  // nothing stored to describe
}

TEST(TranscriptFile, TheBoundCutsTheTranscriptWithANote) {
  const std::string path =
      (std::filesystem::temp_directory_path() / ("hb-transcript-" + std::to_string(::getpid())))
          .string();
  TranscriptFile file(path, 100);
  file.write_line(std::string(60, 'a'));
  file.write_line(std::string(60, 'b'));  // would pass 100 bytes
  const auto record = file.finish();
  ASSERT_TRUE(record);
  EXPECT_TRUE(record->truncated);
  EXPECT_TRUE(record->compressed);
  EXPECT_EQ(record->bytes, static_cast<int64_t>(std::filesystem::file_size(path)));
  EXPECT_NE(record->note.find("bound of 100 bytes"), std::string::npos);
  std::filesystem::remove(path);
}

TEST(TranscriptFile, OnlyAKubernetesNameBecomesAFileName) {
  EXPECT_EQ(transcript_path("/v/transcripts", "bot-1714565100"),
            "/v/transcripts/bot-1714565100.jsonl.gz");
  for (const char* bad : {"", "..", "../etc/passwd", "a/b", "UPPER", "a\nb"}) {
    EXPECT_EQ(transcript_path("/v/transcripts", bad), "") << bad;
  }
}

}  // namespace
}  // namespace hb::runner
