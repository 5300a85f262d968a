// The simulated watches: label selectors as the API server applies them,
// and change logs that forget only what every live watch has taken.
#include "tests/sim/feed.h"

#include <gtest/gtest.h>

namespace hb::sim {
namespace {

using std::chrono::milliseconds;

Json labelled(const std::string& name, Json labels) {
  return {{"metadata", {{"name", name}, {"labels", std::move(labels)}}}};
}

TEST(LabelSelectorTest, EqualsNotEqualsAndExistsAllMustHold) {
  const LabelSelector s("team=a,tier!=gold,owner");
  EXPECT_TRUE(s.matches(labelled("x", {{"team", "a"}, {"owner", "me"}})));
  EXPECT_TRUE(s.matches(labelled("x", {{"team", "a"}, {"tier", "silver"}, {"owner", ""}})));
  EXPECT_FALSE(s.matches(labelled("x", {{"team", "b"}, {"owner", "me"}})));
  EXPECT_FALSE(s.matches(labelled("x", {{"team", "a"}, {"tier", "gold"}, {"owner", "me"}})));
  EXPECT_FALSE(s.matches(labelled("x", {{"team", "a"}})));  // owner absent
  EXPECT_FALSE(s.matches(Json{{"metadata", {{"name", "x"}}}}));
}

TEST(LabelSelectorTest, EmptySelectorMatchesEverythingAndNotEqualsHoldsForAbsent) {
  EXPECT_TRUE(LabelSelector("").matches(Json{{"metadata", {{"name", "x"}}}}));
  EXPECT_TRUE(LabelSelector("a!=b,").matches(Json{{"metadata", {{"name", "x"}}}}));
  EXPECT_TRUE(LabelSelector("a!=b").matches(Json::object()));
}

class FeedTest : public ::testing::Test {
 protected:
  FeedTest() : server_([this] { return now_; }) {}

  std::unique_ptr<Feed> watch(uint64_t id, milliseconds lag, const std::string& selector = "") {
    kube::InformerOptions options;
    options.label_selector = selector;
    auto feed = std::make_unique<Feed>(server_, id, "configmaps", options,
                                       [lag](uint64_t, uint64_t) { return lag; });
    feed->start();
    feed->relist(now_);
    return feed;
  }
  void put(const std::string& name, const std::string& value) {
    Json object{{"metadata", {{"name", name}, {"labels", {{"app", "x"}}}}}, {"data", value}};
    if (server_.peek("configmaps", "ns", name) == nullptr) {
      server_.create(Actor::kUser, "configmaps", "ns", std::move(object));
    } else {
      server_.merge_patch(Actor::kUser, "configmaps", "ns", name, {{"data", value}}, false);
    }
  }
  static std::string data_of(const Feed& feed, const std::string& name) {
    auto object = feed.store().get("ns/" + name);
    return object ? object->value("data", std::string()) : "";
  }

  TimePoint now_{};
  ApiServer server_;
};

TEST_F(FeedTest, ForgettingKeepsWhatTheSlowestWatchHasNotTaken) {
  auto fast = watch(1, milliseconds(0));
  auto slow = watch(2, milliseconds(5000));
  put("a", "1");
  put("a", "2");
  now_ += milliseconds(10);
  fast->deliver(now_);
  slow->deliver(now_);
  EXPECT_EQ(fast->position(), 2u);
  EXPECT_EQ(slow->position(), 0u);
  server_.forget_changes({{"configmaps", std::min(fast->position(), slow->position())}});
  EXPECT_EQ(server_.changes("configmaps").begin(), 0u);  // the slow watch still needs both

  now_ += milliseconds(6000);
  slow->deliver(now_);
  EXPECT_EQ(data_of(*slow, "a"), "2");
  server_.forget_changes({{"configmaps", std::min(fast->position(), slow->position())}});
  EXPECT_EQ(server_.changes("configmaps").begin(), 2u);
  EXPECT_EQ(server_.changes("configmaps").end(), 2u);

  put("a", "3");  // positions go on from where the forgotten ones ended
  now_ += milliseconds(6000);
  fast->deliver(now_);
  slow->deliver(now_);
  EXPECT_EQ(data_of(*fast, "a"), "3");
  EXPECT_EQ(data_of(*slow, "a"), "3");
  EXPECT_EQ(fast->position(), 3u);
}

TEST_F(FeedTest, AResourceNobodyWatchesKeepsNothingAndALaterWatchListsFirst) {
  put("a", "1");
  put("b", "1");
  server_.forget_changes({});
  EXPECT_EQ(server_.changes("configmaps").begin(), server_.changes("configmaps").end());
  auto late = watch(3, milliseconds(0));
  EXPECT_EQ(data_of(*late, "a"), "1");
  EXPECT_EQ(data_of(*late, "b"), "1");
  put("b", "2");
  now_ += milliseconds(1);
  late->deliver(now_);
  EXPECT_EQ(data_of(*late, "b"), "2");
}

TEST_F(FeedTest, AnObjectLeavingTheSelectorIsDeletedForTheWatch) {
  auto feed = watch(4, milliseconds(0), "app=x");
  put("a", "1");
  now_ += milliseconds(1);
  feed->deliver(now_);
  EXPECT_EQ(data_of(*feed, "a"), "1");
  server_.merge_patch(Actor::kUser, "configmaps", "ns", "a",
                      {{"metadata", {{"labels", {{"app", "y"}}}}}}, false);
  now_ += milliseconds(1);
  feed->deliver(now_);
  EXPECT_FALSE(feed->store().contains("ns/a"));
}

}  // namespace
}  // namespace hb::sim
