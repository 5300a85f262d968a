// The read-your-writes overlay: what it keeps of a written object, and
// expiry in write order.
#include "controllers/shell/write_overlay.h"

#include <gtest/gtest.h>

namespace hb::controllers {
namespace {

using namespace std::chrono_literals;

Json object(const std::string& name, int rv) {
  return {{"metadata",
           {{"name", name},
            {"namespace", "ns"},
            {"uid", "u-" + name},
            {"resourceVersion", std::to_string(rv)},
            {"managedFields", Json::array({{{"manager", "heartbeat-operator"}}})}}},
          {"status", {{"phase", "Running"}}}};
}

struct Clock {
  WriteOverlay::Clock::time_point now{};
  WriteOverlay::Now fn() {
    return [this] { return now; };
  }
};

TEST(WriteOverlayTest, KeepsAWrittenObjectWithoutManagedFields) {
  Clock clock;
  WriteOverlay overlay(clock.fn());
  overlay.put("runs", object("a", 5));
  const std::optional<Json> kept = overlay.merge("runs", "ns/a", std::nullopt);
  ASSERT_TRUE(kept);
  EXPECT_FALSE(kept->at("metadata").contains("managedFields"));
  EXPECT_EQ(string_at(*kept, "status/phase"), "Running");
  EXPECT_EQ(string_at(*kept, "metadata/resourceVersion"), "5");
}

TEST(WriteOverlayTest, ExpiresEntriesInWriteOrderAndKeepsOnesWrittenAgain) {
  Clock clock;
  WriteOverlay overlay(clock.fn());
  overlay.put("runs", object("a", 1));
  overlay.put("runs", object("b", 2));
  clock.now += kOverlayTtl / 2;
  overlay.put("runs", object("a", 3));  // written again: its older record must not expire it
  clock.now += kOverlayTtl / 2 + 1s;
  overlay.put("runs", object("c", 4));  // expires b's record and a's first one
  EXPECT_EQ(overlay.size(), 2u);
  EXPECT_FALSE(overlay.merge("runs", "ns/b", std::nullopt));
  ASSERT_TRUE(overlay.merge("runs", "ns/a", std::nullopt));
  clock.now += kOverlayTtl + 1s;
  overlay.erase("runs", "ns/d");  // a later write expires the rest
  EXPECT_EQ(overlay.size(), 1u);  // d's deletion itself
}

// The write wins while the cache is behind it; a cache that caught up, or
// holds another object of the name, wins and drops the entry.
TEST(WriteOverlayTest, TheFresherOfTheCacheAndTheWriteWins) {
  Clock clock;
  WriteOverlay overlay(clock.fn());
  overlay.put("runs", object("a", 5));
  std::optional<Json> read = overlay.merge("runs", "ns/a", object("a", 4));
  ASSERT_TRUE(read);
  EXPECT_EQ(string_at(*read, "metadata/resourceVersion"), "5");
  read = overlay.merge("runs", "ns/a", object("a", 6));
  EXPECT_EQ(string_at(*read, "metadata/resourceVersion"), "6");
  EXPECT_EQ(overlay.size(), 0u);  // caught up: dropped
  overlay.put("runs", object("a", 9));
  Json other = object("a", 2);
  other["metadata"]["uid"] = "u-new";
  read = overlay.merge("runs", "ns/a", other);
  EXPECT_EQ(string_at(*read, "metadata/uid"), "u-new");
  overlay.erase("runs", "ns/a");
  EXPECT_FALSE(overlay.merge("runs", "ns/a", object("a", 9)));  // deleted by us
}

// A list reads its own group's entries: another agent's runs are not
// looked at, and a run written again under another group moves.
TEST(WriteOverlayTest, AListReadsItsGroupOnly) {
  Clock clock;
  WriteOverlay overlay(
      clock.fn(), [](const std::string&, const Json& o) { return string_at(o, "spec/agent"); });
  auto run = [](const std::string& name, const std::string& agent) {
    Json r = object(name, 1);
    r["spec"]["agent"] = agent;
    return r;
  };
  overlay.put("runs", run("a-1", "a"));
  overlay.put("runs", run("b-1", "b"));
  overlay.put("runs", run("a-2", "a"));
  int looked_at = 0;
  auto all = [&looked_at](const Json&) { return ++looked_at > 0; };
  std::vector<Json> of_a = overlay.merge_list("runs", "a", {}, all);
  EXPECT_EQ(of_a.size(), 2u);
  EXPECT_EQ(looked_at, 2);
  overlay.put("runs", run("a-2", "b"));
  EXPECT_EQ(overlay.merge_list("runs", "a", {}, all).size(), 1u);
  EXPECT_EQ(overlay.merge_list("runs", "b", {}, all).size(), 2u);
  EXPECT_EQ(overlay.merge_list("runs", "c", {}, all).size(), 0u);
}

}  // namespace
}  // namespace hb::controllers
