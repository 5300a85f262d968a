#include "kube/list_page_splitter.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "kube/object_limits.h"

namespace hb::kube {
namespace {

using json = nlohmann::json;

struct Split {
  std::vector<std::string> items;
  std::optional<ListPageEnd> end;
  std::string problem;
};

// Feeds the body in pieces of `piece_bytes` (1: every byte on its own).
Split split(const std::string& body, std::size_t piece_bytes) {
  Split out;
  ListPageSplitter splitter([&out](std::string_view item) {
    out.items.emplace_back(item);
    return json::accept(item);
  });
  bool going = true;
  for (std::size_t at = 0; going && at < body.size(); at += piece_bytes) {
    going = splitter.feed(std::string_view(body).substr(at, piece_bytes));
  }
  out.end = splitter.finish();
  out.problem = splitter.problem();
  return out;
}

const std::string kPage = R"({"kind":"List","apiVersion":"v1","metadata":{"continue":"eyJ2Ij0",
    "resourceVersion":"42"},"items":[ {"metadata":{"name":"a"},"s":"]},{\"x\":[","items":[1]} ,
    {"metadata":{"name":"b"},"n":-0.5e+3,"t":true,"u":"\ud83d\ude00","e":"\\"}]})";

// Every item comes back exactly as the full parse reads it, however the
// body is cut into pieces (a brace, quote or backslash split from the rest).
TEST(ListPageSplitter, ItemsAgreeWithTheFullParseInAnyPieces) {
  const json full = json::parse(kPage);
  for (std::size_t piece : {std::size_t{1}, std::size_t{2}, std::size_t{7}, kPage.size()}) {
    const Split s = split(kPage, piece);
    ASSERT_TRUE(s.end.has_value()) << piece << ": " << s.problem;
    EXPECT_EQ(s.end->resource_version, "42");
    EXPECT_EQ(s.end->continue_token, "eyJ2Ij0");
    ASSERT_EQ(s.items.size(), full["items"].size());
    for (std::size_t i = 0; i < s.items.size(); ++i) {
      EXPECT_EQ(json::parse(s.items[i]), full["items"][i]) << s.items[i];
    }
  }
}

TEST(ListPageSplitter, MetadataAfterTheItemsAndEscapedMetadataAreRead) {
  const Split s =
      split(R"({"items":[{"a":1}],"metadata":{"resourceVersion":"7","continue":"a\"b\u0063"}})", 3);
  ASSERT_TRUE(s.end.has_value()) << s.problem;
  EXPECT_EQ(s.items.size(), 1u);
  EXPECT_EQ(s.end->resource_version, "7");
  EXPECT_EQ(s.end->continue_token, "a\"bc");
}

TEST(ListPageSplitter, EmptyAndNullItemsAreAPageWithoutItems) {
  for (std::string body : {std::string(R"({"items":[]})"), std::string(R"({"items" : [ ] })"),
                           std::string(R"({"items":null,"metadata":{}})"), std::string("{}")}) {
    const Split s = split(body, 1);
    ASSERT_TRUE(s.end.has_value()) << body << ": " << s.problem;
    EXPECT_TRUE(s.items.empty()) << body;
    EXPECT_EQ(s.end->continue_token, "") << body;
  }
}

// What a broken or hostile answer could send: each is refused, never a
// page that silently lacks items.
TEST(ListPageSplitter, RefusesWhatIsNotOneListPage) {
  for (std::string bad : {
           std::string(R"({"items":[{"a":1},]})"),        // trailing comma
           std::string(R"({"items":[{"a":1}{"b":2}]})"),  // no comma
           std::string(R"({"items":[,{"a":1}]})"),
           std::string(R"({"items":[1,2]})"),  // items are objects
           std::string(R"({"items":["x"]})"),
           std::string(R"({"items":[{"a":"\x"}]})"),                 // the item does not parse
           std::string(R"({"items":[{"a":1}])"),                     // ends inside the list
           std::string(R"({"items":[{"a":1})"),                      // ends inside the items
           std::string(R"({"items":[{"a":1}]} [])"),                 // something after the list
           std::string(R"([{"items":[]}])"),                         // not an object
           std::string(R"({"items":[{"a":1}],"items":[{"b":2}]})"),  // a second items array
           std::string(R"({"it\u0065ms":[{"a":1}]})"),               // items under an escaped key
           std::string(R"({"items":[]}]]]})"),
           std::string(""),
       }) {
    const Split s = split(bad, 1);
    EXPECT_FALSE(s.end.has_value()) << bad;
    EXPECT_FALSE(s.problem.empty()) << bad;
  }
}

// The problem names a byte the server sent without writing it as it is
// (the problem is logged).
TEST(ListPageSplitter, AStrayByteIsNamedNotCopied) {
  EXPECT_NE(split("{\"items\":[\x1b]}", 1).problem.find("byte 0x1b"), std::string::npos);
  EXPECT_NE(split("{\"items\":[\xff]}", 1).problem.find("byte 0xff"), std::string::npos);
  EXPECT_NE(split(R"({"items":[1]})", 1).problem.find("'1'"), std::string::npos);
}

// A server that sends one endless item is not buffered without end: past
// the bound only its first kListItemBytesMax bytes are kept, and the item
// is refused as too large when it ends (the page goes on). Endless
// metadata fails the page at its bound.
TEST(ListPageSplitter, AnEndlessItemOrEnvelopeStopsAtItsBound) {
  std::size_t kept_bytes = 0;
  int taken = 0;
  ListPageSplitter item_splitter([&taken](std::string_view) { return ++taken > 0; },
                                 [&kept_bytes](RefusalReason reason, std::string_view kept) {
                                   EXPECT_EQ(reason, RefusalReason::kTooLarge);
                                   kept_bytes = kept.size();
                                   return true;
                                 });
  ASSERT_TRUE(item_splitter.feed(R"({"items":[{"a":")"));
  const std::string megabyte(1024 * 1024, 'x');
  for (std::size_t fed = 0; fed <= kListItemBytesMax + 2 * megabyte.size();
       fed += megabyte.size()) {
    ASSERT_TRUE(item_splitter.feed(megabyte)) << item_splitter.problem();
  }
  EXPECT_EQ(kept_bytes, 0u);  // not refused before it ends
  ASSERT_TRUE(item_splitter.feed(R"("},{"b":1}]})"));
  EXPECT_EQ(kept_bytes, kListItemBytesMax);
  EXPECT_EQ(taken, 1);
  EXPECT_TRUE(item_splitter.finish().has_value()) << item_splitter.problem();

  ListPageSplitter envelope_splitter([](std::string_view) { return true; });
  EXPECT_FALSE(envelope_splitter.feed(R"({"metadata":{"continue":")" +
                                      std::string(kListEnvelopeBytesMax, 'c')));
  EXPECT_NE(envelope_splitter.problem().find("other than its items"), std::string::npos);
}

// Nesting no Kubernetes object has (a parser's stack would pay for it) is
// refused before the item reaches the parser, in an item or around them:
// around them it fails the page, and so does an item when no refused-item
// handler skips it (object_refusal_test.cpp: with one, it is skipped).
TEST(ListPageSplitter, NestingDeeperThanAnObjectIsRefusedBeforeTheParser) {
  const int deep = kKubeObjectDepthMax + 10;
  const std::string nested = std::string(deep, '[') + std::string(deep, ']');
  for (const std::string& body : {R"({"items":[{"a":)" + nested + "}]}",
                                  R"({"metadata":{"x":)" + nested + R"(},"items":[]})"}) {
    bool handed_on = false;
    ListPageSplitter splitter([&handed_on](std::string_view) { return handed_on = true; });
    EXPECT_FALSE(splitter.feed(body));
    EXPECT_FALSE(handed_on);
    EXPECT_NE(splitter.problem().find("nested more than"), std::string::npos);
  }
  const std::string fine =
      std::string(kKubeObjectDepthMax - 3, '[') + std::string(kKubeObjectDepthMax - 3, ']');
  EXPECT_TRUE(split(R"({"items":[{"a":)" + fine + "}]}", 5).end.has_value());
}

// The handler refusing an item fails the page: the list is not taken with
// an item missing.
TEST(ListPageSplitter, AnItemTheHandlerRefusesFailsThePage) {
  int seen = 0;
  ListPageSplitter splitter([&seen](std::string_view) { return ++seen < 2; });
  EXPECT_FALSE(splitter.feed(R"({"items":[{"a":1},{"b":2},{"c":3}]})"));
  EXPECT_EQ(seen, 2);
  EXPECT_FALSE(splitter.finish().has_value());
}

}  // namespace
}  // namespace hb::kube
