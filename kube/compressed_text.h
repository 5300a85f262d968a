// Text kept compressed in memory against a dictionary: the informer caches
// hold thousands of objects of one shape (the same keys, kinds, labels,
// condition types and owners), so with one of them as a zstd raw-content
// dictionary each of the others is stored at about a quarter of its size
// (issue 15: 10,000 agents in 64 MiB). The dictionary is immutable once
// made and safe to share between threads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace hb::kube {

// A dictionary's sample is cut to this: more of one object adds little, and
// zstd's tables for it grow with it.
inline constexpr std::size_t kCompressionDictionaryBytesMax = 16 * 1024;
// Texts at or above this are kept as they are (lengths are 32-bit, and
// nothing the caches keep comes near it).
inline constexpr std::size_t kCompressedTextBytesMax = std::size_t{1} << 31;

struct CompressedText {
  std::string bytes;        // a zstd frame, or the text itself when !compressed
  uint32_t text_bytes = 0;  // the text's length, for an exact output buffer
  bool compressed = false;

  std::size_t stored_bytes() const { return bytes.size(); }
};

// The same, where the bytes live elsewhere (stored_object.h).
struct CompressedTextView {
  std::string_view bytes;
  uint32_t text_bytes = 0;
  bool compressed = false;

  CompressedTextView() = default;
  CompressedTextView(std::string_view b, uint32_t text, bool is_compressed)
      : bytes(b), text_bytes(text), compressed(is_compressed) {}
  CompressedTextView(const CompressedText& t)  // NOLINT: a view of it, as string_view of string
      : bytes(t.bytes), text_bytes(t.text_bytes), compressed(t.compressed) {}
};

class TextDictionary {
 public:
  // `sample` (its first kCompressionDictionaryBytesMax bytes) is what texts
  // are compressed against; empty: plain zstd.
  explicit TextDictionary(std::string_view sample);
  ~TextDictionary();
  TextDictionary(const TextDictionary&) = delete;
  TextDictionary& operator=(const TextDictionary&) = delete;

  // Kept as it is when compressing would not make it smaller or zstd fails
  // (out of memory): never an error, only a larger entry.
  CompressedText compress(std::string_view text) const;
  // The text back into `text` (its capacity reused: reads are the hot
  // path), or false when `stored` is not what this dictionary's compress
  // made (the caller's bug: it is the caller's own memory).
  bool decompress(CompressedTextView stored, std::string& text) const;
  std::optional<std::string> decompress(CompressedTextView stored) const;
  // Memory zstd keeps for the dictionary (its tables), for benchmarks.
  std::size_t footprint_bytes() const;

 private:
  struct Tables;
  std::unique_ptr<Tables> tables_;
};

}  // namespace hb::kube
