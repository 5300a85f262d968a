// truncate_utf8 / utf8_prefix: never split a UTF-8 sequence, whatever the cut.
#include "api/utf8.h"

#include <gtest/gtest.h>

namespace hb::api {
namespace {

const std::string kEuro = "\xE2\x82\xAC";       // 3 bytes
const std::string kEmoji = "\xF0\x9F\x98\x80";  // 4 bytes
const std::string kEllipsis = "\xE2\x80\xA6";   // the cut marker
const std::string kE = "\xC3\xA9";              // 2 bytes

// Every byte cut of `text` gives valid UTF-8 no longer than the cut.
void expect_never_split(const std::string& text) {
  for (std::size_t max = 0; max <= text.size() + 1; ++max) {
    const std::string cut = truncate_utf8(text, max);
    EXPECT_LE(cut.size(), max) << "max " << max;
    EXPECT_EQ(sanitize_utf8(cut), cut) << "max " << max;
    const std::string_view prefix = utf8_prefix(text, max);
    EXPECT_LE(prefix.size(), max);
    EXPECT_EQ(sanitize_utf8(prefix), prefix) << "max " << max;
  }
}

TEST(Utf8, ShortTextIsKept) {
  EXPECT_EQ(truncate_utf8("", 0), "");
  EXPECT_EQ(truncate_utf8("abc", 3), "abc");
  EXPECT_EQ(truncate_utf8(kEuro, 3), kEuro);
  EXPECT_EQ(utf8_prefix("abc", 10), "abc");
}

TEST(Utf8, CutTextEndsWithTheMarkerWhenItFits) {
  EXPECT_EQ(truncate_utf8("abcdef", 5), "ab" + kEllipsis);
  EXPECT_EQ(truncate_utf8("abcdef", 3), kEllipsis);
  // Below three bytes no marker fits: the bare prefix.
  EXPECT_EQ(truncate_utf8("abcdef", 2), "ab");
  EXPECT_EQ(truncate_utf8("abcdef", 0), "");
}

TEST(Utf8, NeverSplitsASequence) {
  // A cut inside a 2-, 3- or 4-byte character drops the whole character.
  EXPECT_EQ(utf8_prefix("a" + kE, 2), "a");
  EXPECT_EQ(utf8_prefix("a" + kEuro, 3), "a");
  EXPECT_EQ(utf8_prefix("a" + kEmoji, 4), "a");
  EXPECT_EQ(truncate_utf8(kEuro + kEuro, 5), kEllipsis);
  EXPECT_EQ(truncate_utf8("x" + kEmoji + "y", 5), "x" + kEllipsis);
  EXPECT_EQ(truncate_utf8(kEmoji, 2), "");
  expect_never_split("a" + kE + kEuro + kEmoji + "z" + kEmoji + kEuro + kE);
  expect_never_split(kEmoji + kEmoji + kEmoji);
}

TEST(Utf8, InvalidBytesAreNotExtended) {
  // Stray continuation bytes and a lone lead byte: the cut still lands
  // where no valid character is split, and sanitizing makes JSON-safe text.
  const std::string junk = "ab\x80\x80\x80\x80" + kEuro + "\xE2";
  for (std::size_t max = 0; max <= junk.size(); ++max) {
    EXPECT_LE(truncate_utf8(junk, max).size(), max);
  }
  EXPECT_EQ(utf8_prefix("\x80\x80\x80", 2), "");
  EXPECT_EQ(sanitize_utf8("a\xFF"
                          "b"),
            "a\xEF\xBF\xBD"
            "b");
  EXPECT_EQ(utf8_length("a" + kE + kEuro + kEmoji), 4u);
}

TEST(Utf8, SuffixStartsOnACharacter) {
  EXPECT_EQ(utf8_suffix("a" + kEuro, 2), "");
  EXPECT_EQ(utf8_suffix("a" + kEuro, 3), kEuro);
  EXPECT_EQ(utf8_suffix("abc", 5), "abc");
}

}  // namespace
}  // namespace hb::api
