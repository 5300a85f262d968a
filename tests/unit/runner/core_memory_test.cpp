#include "runner/core_memory.h"

#include <gtest/gtest.h>

namespace hb::runner {
namespace {

MemoryBlocks blocks() {
  return {{"human", "Name: Ada", 20}, {"persona", "", 10}};
}

TEST(CoreMemory, AppendAddsALine) {
  auto result = apply_memory_edit(blocks(), {MemoryEdit::Kind::kAppend, "human", "Likes tea", ""});
  ASSERT_TRUE(std::holds_alternative<MemoryBlocks>(result));
  EXPECT_EQ(std::get<MemoryBlocks>(result)[0].value, "Name: Ada\nLikes tea");
  auto empty = apply_memory_edit(blocks(), {MemoryEdit::Kind::kAppend, "persona", "calm", ""});
  EXPECT_EQ(std::get<MemoryBlocks>(empty)[1].value, "calm");
}

TEST(CoreMemory, AppendOverLimitSaysHowMuchRoomIsLeft) {
  auto result =
      apply_memory_edit(blocks(), {MemoryEdit::Kind::kAppend, "human", "Likes green tea", ""});
  ASSERT_TRUE(std::holds_alternative<MemoryEditError>(result));
  const auto& message = std::get<MemoryEditError>(result).message;
  EXPECT_NE(message.find("limit of 20"), std::string::npos) << message;
  EXPECT_NE(message.find("11 characters of room are left"), std::string::npos) << message;
}

TEST(CoreMemory, LimitCountsCharactersNotBytes) {
  MemoryBlocks b = {{"x", "", 3}};
  EXPECT_TRUE(std::holds_alternative<MemoryBlocks>(
      apply_memory_edit(b, {MemoryEdit::Kind::kAppend, "x", "\xC3\xA9\xC3\xA9\xC3\xA9", ""})));
  EXPECT_TRUE(std::holds_alternative<MemoryEditError>(
      apply_memory_edit(b, {MemoryEdit::Kind::kAppend, "x", "abcd", ""})));
}

TEST(CoreMemory, ReplaceNeedsExactMatch) {
  auto ok = apply_memory_edit(blocks(), {MemoryEdit::Kind::kReplace, "human", "Grace", "Ada"});
  ASSERT_TRUE(std::holds_alternative<MemoryBlocks>(ok));
  EXPECT_EQ(std::get<MemoryBlocks>(ok)[0].value, "Name: Grace");
  auto miss = apply_memory_edit(blocks(), {MemoryEdit::Kind::kReplace, "human", "Grace", "ada"});
  ASSERT_TRUE(std::holds_alternative<MemoryEditError>(miss));
  EXPECT_NE(std::get<MemoryEditError>(miss).message.find("exactly"), std::string::npos);
  auto too_long =
      apply_memory_edit(blocks(), {MemoryEdit::Kind::kReplace, "human", "Augusta Ada King", "Ada"});
  ASSERT_TRUE(std::holds_alternative<MemoryEditError>(too_long));
  EXPECT_NE(std::get<MemoryEditError>(too_long).message.find("room"), std::string::npos);
}

TEST(CoreMemory, UnknownLabelListsTheBlocks) {
  auto result = apply_memory_edit(blocks(), {MemoryEdit::Kind::kAppend, "todo", "x", ""});
  ASSERT_TRUE(std::holds_alternative<MemoryEditError>(result));
  EXPECT_NE(std::get<MemoryEditError>(result).message.find("human, persona"), std::string::npos);
}

TEST(CoreMemory, RenderShowsLabelValueAndUsage) {
  auto text = render_memory_blocks(blocks());
  EXPECT_NE(text.find("<human>"), std::string::npos);
  EXPECT_NE(text.find("chars_current=9 chars_limit=20"), std::string::npos);
  EXPECT_NE(text.find("Name: Ada"), std::string::npos);
}

TEST(CoreMemory, MergeStoredValuesWithSpecLimits) {
  MemoryBlocks spec = {{"human", "initial", 50}, {"new", "fresh", 10}};
  MemoryBlocks stored = {{"human", "edited", 20}, {"extra", "kept", 30}};
  auto merged = merge_memory_blocks(spec, stored);
  ASSERT_EQ(merged.size(), 3u);
  EXPECT_EQ(merged[0], (api::MemoryBlock{"human", "edited", 50}));
  EXPECT_EQ(merged[1], (api::MemoryBlock{"new", "fresh", 10}));
  EXPECT_EQ(merged[2], (api::MemoryBlock{"extra", "kept", 30}));
}

TEST(CoreMemory, EncodeDecodeRoundTrip) {
  auto b = blocks();
  EXPECT_EQ(decode_memory_blocks(encode_memory_blocks(b)).blocks, b);
  for (const char* bad :
       {"{}", "[{}]", R"([{"label":"a","value":3}])", R"([{"label":"a","limit":"big"}])"}) {
    EXPECT_FALSE(decode_memory_blocks(bad).ok()) << bad;
    EXPECT_TRUE(decode_memory_blocks(bad).blocks.empty()) << bad;
  }
}

}  // namespace
}  // namespace hb::runner
