// Dropping string members from compact JSON text, and the store that does it
// on every path an object enters the cache.
#include "kube/strip_members.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "kube/store.h"
#include "kube/watch_scan.h"

namespace hb::kube {
namespace {

constexpr std::string_view kKey = "heartbeat.dev/context";

std::string stripped(std::string text) {
  strip_string_members(text, kKey);
  return text;
}

TEST(StripStringMembers, FirstMiddleLastAndOnlyMember) {
  EXPECT_EQ(stripped(R"({"heartbeat.dev/context":"x","b":"y"})"), R"({"b":"y"})");
  EXPECT_EQ(stripped(R"({"a":"1","heartbeat.dev/context":"x","b":"y"})"), R"({"a":"1","b":"y"})");
  EXPECT_EQ(stripped(R"({"a":"1","heartbeat.dev/context":"x"})"), R"({"a":"1"})");
  EXPECT_EQ(stripped(R"({"heartbeat.dev/context":"x"})"), R"({})");
}

TEST(StripStringMembers, EveryOccurrenceAtAnyDepth) {
  std::string text =
      R"({"metadata":{"annotations":{"heartbeat.dev/context":"{\"a\":1}"}},)"
      R"("spec":{"template":{"metadata":{"annotations":{"n":"r","heartbeat.dev/context":"q"}}}}})";
  EXPECT_EQ(strip_string_members(text, kKey), 2);
  EXPECT_EQ(
      text,
      R"({"metadata":{"annotations":{}},"spec":{"template":{"metadata":{"annotations":{"n":"r"}}}}})");
  EXPECT_TRUE(nlohmann::json::accept(text));
}

TEST(StripStringMembers, EscapesInTheValueAreSkippedCorrectly) {
  // The value holds escaped quotes, a backslash right before the closing
  // quote, and the key itself (escaped, so it is no member).
  const nlohmann::json object = {
      {"a", 1},
      {"heartbeat.dev/context", "say \"hi\" {\"heartbeat.dev/context\":\"inner\"} end\\"},
      {"z", "keep \"heartbeat.dev/context\":\"not a member\""}};
  std::string text = object.dump();
  EXPECT_EQ(strip_string_members(text, kKey), 1);
  const nlohmann::json back = nlohmann::json::parse(text);
  EXPECT_EQ(back, (nlohmann::json{{"a", 1}, {"z", object["z"]}}));
}

TEST(StripStringMembers, LeavesWhatItCannotVouchFor) {
  // Not a string value, spaced (not compact), unterminated: untouched.
  for (const std::string text :
       {R"({"heartbeat.dev/context":1})", R"({"heartbeat.dev/context": "x"})",
        R"({"heartbeat.dev/context":"unterminated)"}) {
    std::string copy = text;
    EXPECT_EQ(strip_string_members(copy, kKey), 0) << text;
    EXPECT_EQ(copy, text);
  }
  std::string other = R"({"heartbeat.dev/contextual":"x"})";
  EXPECT_EQ(strip_string_members(other, kKey), 0);
}

nlohmann::json pod(const std::string& rv) {
  return {{"metadata",
           {{"name", "p"},
            {"namespace", "ns"},
            {"resourceVersion", rv},
            {"annotations", {{"heartbeat.dev/run-name", "r"}, {"heartbeat.dev/context", "big"}}}}}};
}

TEST(StoreDroppedMembers, ListWatchAndScannedEventsAreAllStripped) {
  Store store;
  store.set_dropped_string_members({std::string(kKey)});
  std::vector<std::string> seen;
  StoreHandlers handlers;
  handlers.on_add = [&](const nlohmann::json& o) { seen.push_back(o.dump()); };
  handlers.on_update = [&](const nlohmann::json&, const nlohmann::json& o) {
    seen.push_back(o.dump());
  };
  store.set_handlers(handlers);
  auto annotations_of = [&] { return store.get("ns/p")->at("metadata").at("annotations"); };
  const nlohmann::json kept = {{"heartbeat.dev/run-name", "r"}};

  store.replace({pod("1")});
  EXPECT_EQ(annotations_of(), kept);
  store.apply(WatchEvent{WatchEventType::kModified, pod("2")});
  EXPECT_EQ(annotations_of(), kept);
  const std::string line = nlohmann::json{{"type", "MODIFIED"}, {"object", pod("3")}}.dump();
  auto scanned = scan_watch_event(line);
  ASSERT_TRUE(scanned);
  store.apply(*scanned);
  EXPECT_EQ(annotations_of(), kept);
  EXPECT_EQ(store.get("ns/p")->at("metadata").at("resourceVersion"), "3");
  ASSERT_EQ(seen.size(), 3u);  // the handlers see the stripped object too
  for (const std::string& o : seen) EXPECT_EQ(o.find("big"), std::string::npos) << o;
}

}  // namespace
}  // namespace hb::kube
