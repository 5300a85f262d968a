// The stored transcript never fails a run: a full volume or the bound cuts
// it with a note.
#include "runner/transcript_file.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>

namespace hb::runner {
namespace {

TEST(TranscriptFile, AFullVolumeCutsTheTranscriptWithANote) {
  // /dev/full takes the open and refuses every write with ENOSPC.
  TranscriptFile file(::open("/dev/full", O_RDWR | O_CLOEXEC));
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

std::filesystem::path fresh_dir(const std::string& tag) {
  auto dir = std::filesystem::temp_directory_path() /
             ("hb-transcript-" + tag + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

std::string read_all(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST(TranscriptFile, TheBoundCutsTheTranscriptWithANote) {
  const auto dir = fresh_dir("bound");
  TranscriptFile file(dir.string(), "run.jsonl.gz", 100);
  file.write_line(std::string(60, 'a'));
  file.write_line(std::string(60, 'b'));  // would pass 100 bytes
  const auto record = file.finish();
  ASSERT_TRUE(record);
  EXPECT_TRUE(record->truncated);
  EXPECT_TRUE(record->compressed);
  EXPECT_EQ(record->bytes, static_cast<int64_t>(std::filesystem::file_size(dir / "run.jsonl.gz")));
  EXPECT_NE(record->note.find("bound of 100 bytes"), std::string::npos);
  std::filesystem::remove_all(dir);
}

// The tools may have written the archival volume: a link planted at the
// run's file name is replaced, never written through.
TEST(TranscriptFile, ALinkAtTheFileNameIsReplacedNotFollowed) {
  const auto dir = fresh_dir("link");
  const auto victim = dir / "victim";
  std::ofstream(victim) << "precious";
  std::filesystem::create_symlink(victim, dir / "run.jsonl.gz");
  TranscriptFile file(dir.string(), "run.jsonl.gz");
  file.write_line("{}");
  ASSERT_TRUE(file.finish());
  EXPECT_EQ(read_all(victim), "precious");
  EXPECT_FALSE(std::filesystem::is_symlink(dir / "run.jsonl.gz"));
  EXPECT_TRUE(std::filesystem::is_regular_file(dir / "run.jsonl.gz"));
  std::filesystem::remove_all(dir);
}

TEST(TranscriptFile, ALinkInPlaceOfTheDirectoryIsRefused) {
  const auto dir = fresh_dir("dirlink");
  std::filesystem::create_directories(dir / "elsewhere");
  std::filesystem::create_directory_symlink(dir / "elsewhere", dir / "transcripts");
  TranscriptFile file((dir / "transcripts").string(), "run.jsonl.gz");
  file.write_line("{}");
  EXPECT_FALSE(file.finish());
  EXPECT_NE(file.note().find("could not be created"), std::string::npos) << file.note();
  EXPECT_TRUE(std::filesystem::is_empty(dir / "elsewhere"));
  std::filesystem::remove_all(dir);
}

TEST(TranscriptFile, OnlyAKubernetesNameBecomesAFileName) {
  EXPECT_TRUE(transcript_name_ok("bot-1714565100"));
  EXPECT_EQ(transcript_file_name("bot-1714565100"), "bot-1714565100.jsonl.gz");
  for (const char* bad : {"", "..", "../etc/passwd", "a/b", "UPPER", "a\nb"}) {
    EXPECT_FALSE(transcript_name_ok(bad)) << bad;
  }
}

}  // namespace
}  // namespace hb::runner
