// A store keeps an object's text without the identity its entry already
// holds, and gives the object back whole. Anything that would not come back
// exactly (a hostile or odd object) is kept as it is.
#include "kube/object_identity.h"

#include <gtest/gtest.h>

#include "kube/store.h"

namespace hb::kube {
namespace {

nlohmann::json object(const std::string& ns, const std::string& name, const std::string& rv) {
  nlohmann::json o = {{"kind", "HeartbeatRun"},
                      {"metadata", {{"name", name}, {"resourceVersion", rv}, {"uid", "u-1"}}},
                      {"status", {{"phase", "Succeeded"}}}};
  if (!ns.empty()) o["metadata"]["namespace"] = ns;
  return o;
}

TEST(ObjectIdentity, ElidedAndRestoredGivesTheSameObject) {
  for (const auto& [ns, name] : std::vector<std::pair<std::string, std::string>>{
           {"team-a", "bot-1795759203"}, {"", "cluster-wide"}}) {
    const nlohmann::json original = object(ns, name, "384");
    nlohmann::json o = original;
    const std::string key = Store::key_of(o);
    ASSERT_TRUE(elide_identity(key, "384", o)) << key;
    EXPECT_FALSE(o["metadata"].contains("name"));
    EXPECT_FALSE(o["metadata"].contains("namespace"));
    EXPECT_FALSE(o["metadata"].contains("resourceVersion"));
    EXPECT_EQ(o["metadata"]["uid"], "u-1");
    restore_identity(key, "384", o);
    EXPECT_EQ(o, original);
    EXPECT_EQ(o.dump(), original.dump());
  }
}

// Each of these would not come back as it was: kept whole.
TEST(ObjectIdentity, WhatWouldNotComeBackExactlyIsLeftAlone) {
  std::vector<std::pair<std::string, nlohmann::json>> cases;
  cases.push_back({"team-a/bot", object("team-a", "bot", "")});     // no revision
  cases.push_back({"team-a/bot", object("team-a", "bot", "385")});  // another revision
  cases.push_back({"team-b/bot", object("team-a", "bot", "384")});  // another namespace
  cases.push_back({"team-a/bot", object("", "bot", "384")});        // no namespace
  cases.push_back({"bot", object("team-a", "bot", "384")});         // namespace not in the key
  nlohmann::json empty_ns = object("", "bot", "384");
  empty_ns["metadata"]["namespace"] = "";  // key_of gives "bot"; restoring would not add it
  cases.push_back({"bot", empty_ns});
  nlohmann::json numeric = object("team-a", "bot", "384");
  numeric["metadata"]["resourceVersion"] = 384;
  cases.push_back({"team-a/bot", numeric});
  nlohmann::json slash = object("", "a/b", "384");  // not a valid name; the key would split
  cases.push_back({"a/b", slash});
  cases.push_back({"team-a/bot", nlohmann::json::array()});
  cases.push_back({"team-a/bot", {{"metadata", "not an object"}}});
  for (auto& [key, o] : cases) {
    const nlohmann::json before = o;
    EXPECT_FALSE(elide_identity(key, "384", o)) << key << " " << before.dump();
    EXPECT_EQ(o, before);
  }
}

// Through the store: every read gives the object back with its identity,
// for an entry kept with it elided and for one kept whole.
TEST(ObjectIdentity, TheStoreGivesBackWhatItWasGiven) {
  Store store;
  std::vector<nlohmann::json> seen;
  store.set_handlers({[&](const nlohmann::json& o) { seen.push_back(o); },
                      [&](const nlohmann::json& old, const nlohmann::json& o) {
                        seen.push_back(old);
                        seen.push_back(o);
                      },
                      [&](const nlohmann::json& o) { seen.push_back(o); }});
  const nlohmann::json a = object("team-a", "bot-1", "10");
  nlohmann::json odd = object("", "bot-2", "11");
  odd["metadata"]["namespace"] = "";  // kept whole: an empty namespace would not come back
  store.apply({WatchEventType::kAdded, a});
  store.apply({WatchEventType::kAdded, odd});
  EXPECT_EQ(*store.get("team-a/bot-1"), a);
  EXPECT_EQ(*store.get("bot-2"), odd);
  EXPECT_EQ(store.list(), (std::vector<nlohmann::json>{odd, a}));  // in key order
  nlohmann::json a2 = object("team-a", "bot-1", "12");
  store.replace({a2, odd});
  EXPECT_EQ(*store.get("team-a/bot-1"), a2);
  ASSERT_EQ(seen.size(), 4u);
  EXPECT_EQ(seen[2], a);  // the update's old object, read back from the store
  EXPECT_EQ(seen[3], a2);
  store.set_projection([](nlohmann::json& o) { o.erase("status"); });
  store.reproject("team-a/bot-1");
  nlohmann::json cut = a2;
  cut.erase("status");
  EXPECT_EQ(*store.get("team-a/bot-1"), cut);
}

}  // namespace
}  // namespace hb::kube
