#include "kube/compressed_text.h"

#include <gtest/gtest.h>

#include <atomic>
#include <random>
#include <thread>

namespace hb::kube {
namespace {

std::string run_text(int i, const std::string& output) {
  return R"({"apiVersion":"heartbeat.dev/v1alpha1","kind":"HeartbeatRun","metadata":{)"
         R"("creationTimestamp":"2026-11-27T06:0)" +
         std::to_string(i % 10) + R"(:03Z","name":"agent-)" + std::to_string(i) +
         R"(-1795759203","namespace":"fleet","resourceVersion":")" + std::to_string(1000 + i) +
         R"("},"status":{"costRecorded":true,"output":")" + output +
         R"(","phase":"Succeeded","reason":"Completed"}})";
}

std::string random_bytes(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::string out(n, '\0');
  for (char& c : out) c = static_cast<char>(rng() & 0xff);
  return out;
}

TEST(CompressedText, RoundTripsAgainstADictionaryAndShrinksObjectsOfOneShape) {
  const TextDictionary dictionary(run_text(0, "checked the queue; nothing to do"));
  const std::string text = run_text(7, "opened two issues and closed one");
  CompressedText stored = dictionary.compress(text);
  EXPECT_TRUE(stored.compressed);
  EXPECT_EQ(stored.text_bytes, text.size());
  // Most of the object is in the dictionary: a few dozen bytes remain.
  EXPECT_LT(stored.stored_bytes() * 3, text.size());
  EXPECT_EQ(dictionary.decompress(stored), text);
  // Without the dictionary the same text stays far larger.
  const TextDictionary none("");
  CompressedText plain = none.compress(text);
  EXPECT_GT(plain.stored_bytes(), stored.stored_bytes() * 2);
  EXPECT_EQ(none.decompress(plain), text);
}

TEST(CompressedText, IncompressibleAndEmptyTextIsKeptAsItIs) {
  const TextDictionary dictionary("dictionary");
  const std::string noise = random_bytes(300, 1);
  CompressedText stored = dictionary.compress(noise);
  EXPECT_FALSE(stored.compressed);
  EXPECT_EQ(stored.bytes, noise);
  EXPECT_EQ(TextDictionary("another").decompress(stored), noise);  // not used
  CompressedText empty = dictionary.compress("");
  EXPECT_FALSE(empty.compressed);
  EXPECT_EQ(dictionary.decompress(empty), "");
}

TEST(CompressedText, AnotherDictionaryOrDamagedBytesAreRefusedNotMisread) {
  const TextDictionary dictionary(run_text(0, "first"));
  const std::string text = run_text(9, "second");
  CompressedText stored = dictionary.compress(text);
  ASSERT_TRUE(stored.compressed);
  // A wrong dictionary never yields the text.
  EXPECT_NE(TextDictionary(run_text(5, "unrelated words")).decompress(stored), text);
  CompressedText cut = stored;
  cut.bytes.resize(cut.bytes.size() / 2);
  EXPECT_EQ(dictionary.decompress(cut), std::nullopt);
  CompressedText longer = stored;
  longer.text_bytes += 1;  // the text must fill the buffer exactly
  EXPECT_EQ(dictionary.decompress(longer), std::nullopt);
  CompressedText garbage{random_bytes(64, 3), 100, true};
  EXPECT_EQ(dictionary.decompress(garbage), std::nullopt);
}

TEST(CompressedText, ALongSampleIsCutToTheBound) {
  const std::string head = random_bytes(kCompressionDictionaryBytesMax, 2);
  const TextDictionary dictionary(head + std::string(4000, 'x'));
  const std::string text = head.substr(0, 1000) + std::string(1000, 'y');
  CompressedText stored = dictionary.compress(text);
  EXPECT_TRUE(stored.compressed);
  EXPECT_LT(stored.stored_bytes(), 200u);  // the head is in the dictionary
  EXPECT_EQ(dictionary.decompress(stored), text);
}

TEST(CompressedText, ThreadsShareOneDictionary) {
  const TextDictionary dictionary(run_text(0, "shared"));
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 200; ++i) {
        const std::string text = run_text(t * 1000 + i, "thread " + std::to_string(t));
        if (dictionary.decompress(dictionary.compress(text)) != text) ++wrong;
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(wrong.load(), 0);
}

}  // namespace
}  // namespace hb::kube
