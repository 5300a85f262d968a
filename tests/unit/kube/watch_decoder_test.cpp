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
    EXPECT_TRUE(
        splitter.feed(chunk, [&](std::string_view line) { lines.emplace_back(line); }).ok());
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
  EXPECT_TRUE(splitter.feed(R"({"type":"ADD)", [&](std::string_view) { ++lines; }).ok());
  EXPECT_EQ(lines, 0);
  EXPECT_GT(splitter.pending_bytes(), 0u);
  Done fed = splitter.feed("ED\"}\n\n", [&](std::string_view line) {
    ++lines;
    EXPECT_EQ(line, R"({"type":"ADDED"})");
  });
  EXPECT_TRUE(fed.ok());
  EXPECT_EQ(lines, 1);  // the blank line is skipped
  EXPECT_EQ(splitter.pending_bytes(), 0u);
}

TEST(LineSplitter, UnboundedLineIsAnError) {
  LineSplitter splitter;
  std::string big(1024 * 1024, 'x');
  Done fed = done();
  for (int i = 0; i < 17 && fed.ok(); ++i) fed = splitter.feed(big, [](std::string_view) {});
  ASSERT_FALSE(fed.ok());
  EXPECT_EQ(fed.error().kind, ErrorKind::kMalformed);
  EXPECT_NE(fed.error().message.find("without a newline"), std::string::npos);
  EXPECT_EQ(splitter.pending_bytes(), 0u);
}

TEST(WatchDecode, EventTypes) {
  auto added = decode_watch_event(event_line("ADDED", "a", "10")).value();
  EXPECT_EQ(added.type, WatchEventType::kAdded);
  EXPECT_EQ(event_resource_version(added), "10");
  EXPECT_EQ(added.object["metadata"]["name"], "a");
  EXPECT_EQ(decode_watch_event(event_line("MODIFIED", "a", "11")).value().type,
            WatchEventType::kModified);
  EXPECT_EQ(decode_watch_event(event_line("DELETED", "a", "12")).value().type,
            WatchEventType::kDeleted);
}

TEST(WatchDecode, BookmarkCarriesOnlyResourceVersion) {
  auto bookmark =
      decode_watch_event(
          R"({"type":"BOOKMARK","object":{"kind":"Agent","apiVersion":"heartbeat.dev/v1alpha1","metadata":{"resourceVersion":"12345","creationTimestamp":null}}})")
          .value();
  EXPECT_EQ(bookmark.type, WatchEventType::kBookmark);
  EXPECT_EQ(event_resource_version(bookmark), "12345");
}

TEST(WatchDecode, ErrorEventCarriesStatus) {
  auto error =
      decode_watch_event(
          R"J({"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old resource version: 1 (5)","reason":"Expired","code":410}})J")
          .value();
  EXPECT_EQ(error.type, WatchEventType::kError);
  EXPECT_EQ(error.object["code"], 410);
  EXPECT_EQ(event_resource_version(error), "");
}

TEST(WatchDecode, MalformedLinesAreErrorsWithReason) {
  for (std::string bad :
       {"not json", "[1,2]", R"({"object":{}})", R"({"type":"ADDED"})",
        R"({"type":"ADDED","object":"x"})", R"({"type":"EXPLODED","object":{}})",
        // What a cache could not key: no metadata, or a name, namespace or
        // resourceVersion that is not a string.
        R"({"type":"ADDED","object":{}})", R"({"type":"MODIFIED","object":{"metadata":[]}})",
        R"({"type":"DELETED","object":{"metadata":{"name":7}}})",
        R"({"type":"ADDED","object":{"metadata":{"name":"a","namespace":null}}})",
        R"({"type":"ADDED","object":{"metadata":{"name":"a","resourceVersion":5}}})"}) {
    Result<WatchEvent> decoded = decode_watch_event(bad);
    ASSERT_FALSE(decoded.ok()) << bad;
    EXPECT_EQ(decoded.error().kind, ErrorKind::kMalformed) << bad;
    EXPECT_FALSE(decoded.error().message.empty()) << bad;
  }
}

}  // namespace
}  // namespace hb::kube
