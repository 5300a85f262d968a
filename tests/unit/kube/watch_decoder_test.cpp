#include "kube/watch_decoder.h"

#include <gtest/gtest.h>

namespace hb::kube {
namespace {

std::string event_line(const std::string& type, const std::string& name, const std::string& rv) {
  return R"({"type":")" + type + R"(","object":{"kind":"Agent","metadata":{"name":")" + name +
         R"(","namespace":"ns","resourceVersion":")" + rv + R"("}}})" + "\n";
}

std::vector<std::string> split_all(const std::vector<std::string>& chunks) {
  LineSplitter splitter;
  std::vector<std::string> lines;
  for (const auto& chunk : chunks) {
    splitter.feed(chunk, [&](std::string_view line) { lines.emplace_back(line); });
  }
  return lines;
}

TEST(LineSplitter, EveryCutPointGivesTheSameLines) {
  std::string stream = event_line("ADDED", "a", "1") + event_line("MODIFIED", "a", "2") +
                       event_line("DELETED", "a", "3");
  auto whole = split_all({stream});
  ASSERT_EQ(whole.size(), 3u);
  // Cut the stream into two chunks at every possible byte, and into 1-byte chunks.
  for (size_t cut = 0; cut <= stream.size(); ++cut) {
    EXPECT_EQ(split_all({stream.substr(0, cut), stream.substr(cut)}), whole) << "cut at " << cut;
  }
  std::vector<std::string> bytes;
  for (char c : stream) bytes.emplace_back(1, c);
  EXPECT_EQ(split_all(bytes), whole);
}

TEST(LineSplitter, KeepsPartialLineUntilNewline) {
  LineSplitter splitter;
  int lines = 0;
  splitter.feed(R"({"type":"ADD)", [&](std::string_view) { ++lines; });
  EXPECT_EQ(lines, 0);
  EXPECT_GT(splitter.pending_bytes(), 0u);
  splitter.feed("ED\"}\n\n", [&](std::string_view line) {
    ++lines;
    EXPECT_EQ(line, R"({"type":"ADDED"})");
  });
  EXPECT_EQ(lines, 1);  // the blank line is skipped
  EXPECT_EQ(splitter.pending_bytes(), 0u);
}

TEST(LineSplitter, UnboundedLineIsAnError) {
  LineSplitter splitter;
  std::string big(1024 * 1024, 'x');
  EXPECT_THROW(
      {
        for (int i = 0; i < 17; ++i) splitter.feed(big, [](std::string_view) {});
      },
      WatchDecodeError);
}

TEST(WatchDecode, EventTypes) {
  auto added = decode_watch_event(event_line("ADDED", "a", "10"));
  EXPECT_EQ(added.type, WatchEventType::kAdded);
  EXPECT_EQ(event_resource_version(added), "10");
  EXPECT_EQ(added.object["metadata"]["name"], "a");
  EXPECT_EQ(decode_watch_event(event_line("MODIFIED", "a", "11")).type, WatchEventType::kModified);
  EXPECT_EQ(decode_watch_event(event_line("DELETED", "a", "12")).type, WatchEventType::kDeleted);
}

TEST(WatchDecode, BookmarkCarriesOnlyResourceVersion) {
  auto bookmark = decode_watch_event(
      R"({"type":"BOOKMARK","object":{"kind":"Agent","apiVersion":"heartbeat.dev/v1alpha1","metadata":{"resourceVersion":"12345","creationTimestamp":null}}})");
  EXPECT_EQ(bookmark.type, WatchEventType::kBookmark);
  EXPECT_EQ(event_resource_version(bookmark), "12345");
}

TEST(WatchDecode, ErrorEventCarriesStatus) {
  auto error = decode_watch_event(
      R"J({"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old resource version: 1 (5)","reason":"Expired","code":410}})J");
  EXPECT_EQ(error.type, WatchEventType::kError);
  EXPECT_EQ(error.object["code"], 410);
  EXPECT_EQ(event_resource_version(error), "");
}

TEST(WatchDecode, MalformedLinesThrowWithReason) {
  for (std::string bad :
       {"not json", "[1,2]", R"({"object":{}})", R"({"type":"ADDED"})",
        R"({"type":"ADDED","object":"x"})", R"({"type":"EXPLODED","object":{}})"}) {
    EXPECT_THROW(decode_watch_event(bad), WatchDecodeError) << bad;
  }
}

}  // namespace
}  // namespace hb::kube
