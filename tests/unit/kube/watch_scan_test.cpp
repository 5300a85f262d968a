#include "kube/watch_scan.h"

#include <gtest/gtest.h>

#include "kube/store.h"

namespace hb::kube {
namespace {

using nlohmann::json;

json without_managed_fields(json o) {
  o["metadata"].erase("managedFields");
  return o;
}

// The scanner must agree with the full decoder on everything it reports.
void expect_agrees(const std::string& line) {
  auto scanned = scan_watch_event(line);
  ASSERT_TRUE(scanned.has_value()) << line;
  WatchEvent full = decode_watch_event(line).value();
  EXPECT_EQ(scanned->type, full.type);
  EXPECT_EQ(json::parse(scanned->object_text), full.object);
  EXPECT_EQ(json::parse(scanned->compact_object_text()), without_managed_fields(full.object))
      << line;
  EXPECT_EQ(scanned->resource_version, event_resource_version(full));
  if (full.type != WatchEventType::kBookmark) {
    EXPECT_EQ(scanned->name, full.object["metadata"]["name"].get<std::string>());
    EXPECT_EQ(scanned->namespace_, full.object["metadata"].value("namespace", ""));
  }
}

TEST(WatchScan, AgreesWithFullDecoderWhereverManagedFieldsSits) {
  const std::string mf =
      R"("managedFields":[{"manager":"kubectl","fieldsV1":{"f:spec":{".":{},"f:x":{}}}}])";
  const std::string name = R"("name":"a")", ns = R"("namespace":"n")",
                    rv = R"("resourceVersion":"42")";
  for (const auto& meta : {"{" + mf + "," + name + "," + ns + "," + rv + "}",
                           "{" + name + "," + mf + "," + ns + "," + rv + "}",
                           "{" + name + "," + ns + "," + rv + "," + mf + "}",
                           "{ " + name + " , " + ns + " ,\n " + rv + " , " + mf + " }",
                           "{" + name + "," + ns + "," + rv + "}"}) {
    for (const char* type : {"ADDED", "MODIFIED", "DELETED"}) {
      expect_agrees(std::string(R"({"type":")") + type +
                    R"(","object":{"kind":"Agent","metadata":)" + meta +
                    R"(,"spec":{"list":[1,-2.5e3,true,null,"s\"q"],"nested":{"deep":[[{}]]}}}})");
    }
  }
}

TEST(WatchScan, ObjectFirstThenTypeAndClusterScoped) {
  expect_agrees(
      R"({"object":{"metadata":{"name":"cluster-thing","resourceVersion":"7"}},"type":"ADDED"})");
}

TEST(WatchScan, Bookmark) {
  auto s = scan_watch_event(
      R"({"type":"BOOKMARK","object":{"kind":"Agent","metadata":{"resourceVersion":"99","creationTimestamp":null}}})");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->type, WatchEventType::kBookmark);
  EXPECT_EQ(s->resource_version, "99");
}

TEST(WatchScan, DefersToFullDecoderWhenUnsure) {
  for (
      std::string line : {
          std::string(R"({"type":"ERROR","object":{"kind":"Status","code":410}})"),
          std::string(
              R"({"type":"ADDED","object":{"metadata":{"name":"a\u0041","resourceVersion":"1"}}})"),
          std::string(R"({"type":"ADDED","object":{"metadata":{"name":"a")"),  // cut short
          std::string(R"({"type":"ADDED","object":{"metadata":{"name":"a"}}} trailing)"),
          std::string(
              R"({"type":"ADDED","object":{"metadata":{"resourceVersion":"1"}}})"),  // no name
          std::string(R"({"type":"ADDED"})"),
          std::string("not json"),
          std::string(R"({"type":"ADDED","object":{"metadata":{"name":"a"},"x":[1,}}})"),
      }) {
    EXPECT_FALSE(scan_watch_event(line).has_value()) << line;
  }
}

TEST(WatchScan, DepthIsBounded) {
  std::string deep = R"({"type":"ADDED","object":{"metadata":{"name":"a"},"x":)";
  for (int i = 0; i < kKubeObjectDepthMax + 10; ++i) deep += "[";
  for (int i = 0; i < kKubeObjectDepthMax + 10; ++i) deep += "]";
  deep += "}}";
  EXPECT_FALSE(scan_watch_event(deep).has_value());
}

TEST(WatchScan, StoreApplyOfScannedEventsMatchesDecodedPath) {
  Store store;
  std::vector<std::string> keys;
  store.set_handlers(
      {nullptr, nullptr, nullptr, [&](const std::string& key) { keys.push_back(key); }});
  std::string line =
      R"({"type":"ADDED","object":{"metadata":{"name":"a","namespace":"n","resourceVersion":"1","managedFields":[{}]},"spec":{"v":1}}})";
  store.apply(*scan_watch_event(line));
  auto cached = store.get("n/a");
  ASSERT_TRUE(cached);
  EXPECT_FALSE(cached->at("metadata").contains("managedFields"));
  EXPECT_EQ(cached->at("spec").at("v"), 1);
  store.apply(*scan_watch_event(
      R"({"type":"DELETED","object":{"metadata":{"name":"a","namespace":"n","resourceVersion":"2"}}})"));
  EXPECT_FALSE(store.get("n/a"));
  EXPECT_EQ(keys, (std::vector<std::string>{"n/a", "n/a"}));
}

// Found by tests/fuzz/watch_scan_fuzz: the scanner took lines the full JSON
// decoder refuses, so the store held text that fails a later parse. Each line
// below has a valid name and resourceVersion and one defect elsewhere.
TEST(WatchScan, RefusesWhatTheFullDecoderRefuses) {
  const std::string head =
      R"({"type":"ADDED","object":{"metadata":{"name":"a","resourceVersion":"1"},"x":)";
  for (std::string bad :
       {std::string("\"\xff\xfe\""),      // invalid UTF-8
        std::string("\"\xc0\xaf\""),      // overlong UTF-8
        std::string("\"\xed\xa0\x80\""),  // UTF-8 surrogate
        std::string(R"("\x")"),           // unknown escape
        std::string(R"("\u12")"),         // short \u
        std::string(R"("\udc00")"),       // lone low surrogate
        std::string(R"("\ud800x")"),      // high surrogate alone
        std::string("1abc"), std::string("-"), std::string("01"), std::string("1."),
        std::string("1e"), std::string("truex"), std::string("+1"), std::string(".5"),
        std::string("1e400"), std::string("-2.5E+999"), std::string(400, '9')}) {
    const std::string line = head + bad + "}}";
    EXPECT_FALSE(decode_watch_event(line).ok()) << line;
    EXPECT_FALSE(scan_watch_event(line).has_value()) << line;
  }
  for (std::string good :
       {std::string("\"caf\xc3\xa9 \xf0\x9f\x98\x80\""), std::string(R"("\ud83d\ude00\n\u00e9")"),
        std::string("-0.5e+3"), std::string("0"), std::string("null")}) {
    EXPECT_TRUE(scan_watch_event(head + good + "}}").has_value()) << good;
  }
}

}  // namespace
}  // namespace hb::kube
