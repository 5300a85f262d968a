#include "kube/store.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>

#include "kube/watch_scan.h"

namespace hb::kube {
namespace {

nlohmann::json obj(const std::string& name, const std::string& rv, int value = 0) {
  return {{"metadata",
           {{"name", name},
            {"namespace", "ns"},
            {"resourceVersion", rv},
            {"managedFields", nlohmann::json::array({{{"manager", "kubectl"}}})}}},
          {"spec", {{"value", value}}}};
}

struct Recorder {
  std::vector<std::string> log;
  StoreHandlers handlers() {
    return {[this](const nlohmann::json& o) { log.push_back("add " + Store::key_of(o)); },
            [this](const nlohmann::json& old_o, const nlohmann::json& o) {
              log.push_back("update " + Store::key_of(o) + " " +
                            old_o["metadata"]["resourceVersion"].get<std::string>() + "->" +
                            o["metadata"]["resourceVersion"].get<std::string>());
            },
            [this](const nlohmann::json& o) { log.push_back("delete " + Store::key_of(o)); }};
  }
};

TEST(Store, EventsAddUpdateDelete) {
  Store store;
  Recorder rec;
  store.set_handlers(rec.handlers());
  store.apply({WatchEventType::kAdded, obj("a", "1")});
  store.apply({WatchEventType::kModified, obj("a", "2", 7)});
  EXPECT_EQ(store.get("ns/a")->at("spec").at("value"), 7);
  EXPECT_TRUE(store.contains("ns/a"));
  store.apply({WatchEventType::kDeleted, obj("a", "3")});
  EXPECT_FALSE(store.get("ns/a"));
  EXPECT_FALSE(store.contains("ns/a"));
  EXPECT_EQ(rec.log, (std::vector<std::string>{"add ns/a", "update ns/a 1->2", "delete ns/a"}));
}

// A handler that does not read the old object is given a null one (the
// kept copy is not parsed for it); the new object is the same either way,
// from a list's swap as from a watch event.
TEST(Store, UpdateWithoutTheOldObjectWhenTheHandlerDoesNotReadIt) {
  Store store;
  std::vector<std::string> log;
  StoreHandlers h;
  h.on_update = [&log](const nlohmann::json& old_o, const nlohmann::json& o) {
    log.push_back((old_o.is_null() ? std::string("null") : "old") + "->" +
                  o["metadata"]["resourceVersion"].get<std::string>());
  };
  h.update_reads_old = false;
  store.set_handlers(h);
  store.apply({WatchEventType::kAdded, obj("a", "1")});
  store.apply({WatchEventType::kModified, obj("a", "2", 7)});
  store.replace(std::vector<nlohmann::json>{obj("a", "3", 8)});
  EXPECT_EQ(log, (std::vector<std::string>{"null->2", "null->3"}));
  EXPECT_EQ(store.get("ns/a")->at("spec").at("value"), 8);
}

// A key prefix reads just its neighbours, across page boundaries, against
// a plain filter of every key (pages hold at most 16 entries).
TEST(Store, WithKeyPrefixReadsExactlyTheKeysThatStartWithIt) {
  Store store;
  std::vector<std::string> names;
  for (int agent = 0; agent < 30; ++agent) {
    for (int run = 0; run < 12; ++run) {
      names.push_back("agent-" + std::to_string(agent) + "-" + std::to_string(1000 + run));
    }
  }
  names.push_back("agent-1");
  names.push_back("agent-1-");
  for (std::size_t i = 0; i < names.size(); ++i) {
    // In a scrambled order, so pages split and merge as they would.
    const std::string& name = names[(i * 7919) % names.size()];
    store.apply({WatchEventType::kAdded, obj(name, std::to_string(i + 1))});
  }
  for (const std::string prefix : {"ns/agent-1-", "ns/agent-1", "ns/agent-29-1011", "ns/agent-3-",
                                   "ns/", "ns/zzz", "a", "ns/agent-0-1000", ""}) {
    std::vector<std::string> expected;
    for (const std::string& key : store.keys()) {
      if (key.rfind(prefix, 0) == 0) expected.push_back(key);
    }
    std::vector<std::string> got;
    for (const nlohmann::json& o : store.with_key_prefix(prefix)) got.push_back(Store::key_of(o));
    EXPECT_EQ(got, expected) << prefix;
  }
  EXPECT_EQ(store.with_key_prefix("ns/agent-1-").size(), 13u);  // 12 runs and "agent-1-"
}

TEST(Store, StripsManagedFields) {
  Store store;
  store.apply({WatchEventType::kAdded, obj("a", "1")});
  EXPECT_FALSE(store.get("ns/a")->at("metadata").contains("managedFields"));
}

TEST(Store, RelistSwapReportsMissedDeletesAddsAndUpdates) {
  Store store;
  store.replace({obj("keep", "1"), obj("change", "1"), obj("gone", "1")});
  Recorder rec;
  store.set_handlers(rec.handlers());
  // While disconnected: "gone" was deleted, "change" modified, "new" created.
  store.replace({obj("keep", "1"), obj("change", "5"), obj("new", "6")});
  std::sort(rec.log.begin(), rec.log.end());
  EXPECT_EQ(rec.log,
            (std::vector<std::string>{"add ns/new", "delete ns/gone", "update ns/change 1->5"}));
  EXPECT_EQ(store.keys(), (std::vector<std::string>{"ns/change", "ns/keep", "ns/new"}));
}

// Relists of many pages' worth, in any overlap with what was kept: exactly
// the new keys added, the vanished deleted (with their old object) and the
// moved ones updated from their old revision, in one pass over both.
TEST(Store, RelistsOfManyPagesReportExactlyTheDifference) {
  std::mt19937 rng(11);
  for (int round = 0; round < 20; ++round) {
    std::map<std::string, std::string> before, after;  // name -> revision
    for (int i = 0; i < 300; ++i) {
      const std::string name = "o" + std::to_string(rng() % 400);
      if (rng() % 2) before[name] = std::to_string(rng() % 3);
      if (rng() % 2) after[name] = std::to_string(rng() % 3);
    }
    auto objects = [](const std::map<std::string, std::string>& names) {
      std::vector<nlohmann::json> out;
      for (const auto& [name, rv] : names) out.push_back(obj(name, rv));
      return out;
    };
    Store store;
    store.replace(objects(before));
    Recorder rec;
    store.set_handlers(rec.handlers());
    store.replace(objects(after));
    std::vector<std::string> expected;
    for (const auto& [name, rv] : after) {
      auto was = before.find(name);
      if (was == before.end()) {
        expected.push_back("add ns/" + name);
      } else if (was->second != rv) {
        expected.push_back("update ns/" + name + " " + was->second + "->" + rv);
      }
    }
    for (const auto& [name, rv] : before) {
      if (after.count(name) == 0) expected.push_back("delete ns/" + name);
    }
    std::sort(expected.begin(), expected.end());
    std::sort(rec.log.begin(), rec.log.end());
    EXPECT_EQ(rec.log, expected) << "round " << round;
    EXPECT_EQ(store.size(), after.size());
  }
}

TEST(Store, ReadersNeverSeeHalfBuiltCache) {
  Store store;
  std::vector<nlohmann::json> first, second;
  for (int i = 0; i < 200; ++i) first.push_back(obj("o" + std::to_string(i), "1"));
  for (int i = 0; i < 200; ++i) second.push_back(obj("o" + std::to_string(i), "2"));
  store.replace(first);
  bool seen_partial = false;
  // A handler runs after the swap; at that moment every object is the new one.
  store.set_handlers({nullptr,
                      [&](const nlohmann::json&, const nlohmann::json&) {
                        for (const auto& o : store.list()) {
                          if (o["metadata"]["resourceVersion"] != "2") seen_partial = true;
                        }
                      },
                      nullptr});
  store.replace(second);
  EXPECT_FALSE(seen_partial);
  EXPECT_EQ(store.size(), 200u);
}

// A relist built page by page keeps only the encoded text of each object,
// projected as it is added, and reports against the old contents as a
// whole-list replace does.
TEST(Store, AReplacementBuiltItemByItemIsProjectedAndSwappedInAtOnce) {
  Store store;
  store.set_projection([](nlohmann::json& o) { o.erase("spec"); });
  store.replace({obj("keep", "1"), obj("gone", "1")});
  Recorder rec;
  store.set_handlers(rec.handlers());
  Store::Replacement next = store.begin_replace();
  next.add(obj("keep", "1"));
  next.add(obj("new", "2", 5));
  EXPECT_EQ(next.size(), 2u);
  EXPECT_TRUE(store.contains("ns/gone"));  // nothing changes before the swap
  store.replace(std::move(next));
  std::sort(rec.log.begin(), rec.log.end());
  EXPECT_EQ(rec.log, (std::vector<std::string>{"add ns/new", "delete ns/gone"}));
  EXPECT_EQ(store.keys(), (std::vector<std::string>{"ns/keep", "ns/new"}));
  EXPECT_FALSE(store.get("ns/new")->contains("spec"));
}

// A list pass sees each object after the projection, in list order, and
// may name objects listed before it to be cut again: here only the
// object with the largest spec.value listed so far keeps its spec. A name
// it gives that was never listed (or was discarded) is ignored.
class LargestKeepsSpec final : public ListPass {
 public:
  std::vector<std::string> admit(nlohmann::json& o) override {
    const int value = o["spec"]["value"];
    if (value <= best_) {
      revisit(o);
      return {"ns/never-listed"};
    }
    std::vector<std::string> out = {"ns/never-listed"};
    if (!best_key_.empty()) out.push_back(best_key_);
    best_ = value;
    best_key_ = Store::key_of(o);
    return out;
  }
  void revisit(nlohmann::json& o) override { o.erase("spec"); }

 private:
  int best_ = -1;
  std::string best_key_;
};

TEST(StoreListPass, ObjectsItPushesOutAreCutAgainBeforeTheSwap) {
  Store store;
  int passes = 0;
  store.set_projection(nullptr, [&passes] {
    ++passes;
    return std::make_unique<LargestKeepsSpec>();
  });
  Store::Replacement list = store.begin_replace();
  auto spec_kept = [&list](const std::string& name) {
    return list.get("ns/" + name)->contains("spec");
  };
  list.add(obj("a", "1", 3));
  EXPECT_TRUE(spec_kept("a"));
  list.add(obj("b", "1", 1));
  EXPECT_TRUE(spec_kept("a"));
  EXPECT_FALSE(spec_kept("b"));
  list.add(obj("c", "1", 7));
  EXPECT_FALSE(spec_kept("a"));  // pushed out while the list is still coming
  EXPECT_TRUE(spec_kept("c"));
  EXPECT_FALSE(list.get("ns/never-listed").has_value());
  EXPECT_FALSE(list.get("ns/a")->at("metadata").contains("managedFields"));
  store.replace(std::move(list));
  EXPECT_EQ(store.keys(), (std::vector<std::string>{"ns/a", "ns/b", "ns/c"}));
  EXPECT_EQ(store.get("ns/c")->at("spec").at("value"), 7);
  EXPECT_FALSE(store.get("ns/a")->contains("spec"));
  // Each list gets a pass of its own (what one list saw says nothing of the next).
  store.replace({obj("a", "2", 3)});
  EXPECT_EQ(passes, 2);
  EXPECT_TRUE(store.get("ns/a")->contains("spec"));
}

// A projection may discard an object (make it null): nothing is kept and
// nothing reported, by an event, a list or a later reprojection.
TEST(StoreProjection, ADiscardedObjectIsNotKeptAndNotReported) {
  Store store;
  bool discard_b = false;
  store.set_projection([&](nlohmann::json& o) {
    if (o["metadata"]["name"] == "b" && discard_b) o = nullptr;
  });
  Recorder rec;
  store.set_handlers(rec.handlers());
  store.apply({WatchEventType::kAdded, obj("a", "1")});
  store.apply({WatchEventType::kAdded, obj("b", "1")});
  EXPECT_TRUE(store.contains("ns/b"));
  discard_b = true;
  store.reproject("ns/a");  // its answer has not changed
  store.reproject("ns/b");
  EXPECT_TRUE(store.contains("ns/a"));
  EXPECT_FALSE(store.contains("ns/b"));
  store.apply({WatchEventType::kModified, obj("b", "2")});
  store.apply({WatchEventType::kDeleted, obj("b", "3")});
  EXPECT_FALSE(store.contains("ns/b"));
  store.replace({obj("a", "1"), obj("b", "4")});
  EXPECT_EQ(store.keys(), (std::vector<std::string>{"ns/a"}));
  EXPECT_EQ(rec.log, (std::vector<std::string>{"add ns/a", "add ns/b"}));
}

// The cache may drop an object (reproject, from another informer's thread)
// while a relist is still reporting: the dropped object is not reported,
// and nothing throws.
TEST(StoreProjection, AnObjectDroppedWhileARelistReportsIsSkipped) {
  Store store;
  bool discard_b = false;
  store.set_projection([&](nlohmann::json& o) {
    if (o["metadata"]["name"] == "b" && discard_b) o = nullptr;
  });
  std::vector<std::string> added;
  store.set_handlers({[&](const nlohmann::json& o) {
                        added.push_back(Store::key_of(o));
                        discard_b = true;
                        store.reproject("ns/b");  // as the runs informer would, mid-report
                      },
                      nullptr, nullptr});
  EXPECT_NO_THROW(store.replace({obj("a", "1"), obj("b", "1")}));
  EXPECT_EQ(added, (std::vector<std::string>{"ns/a"}));
  EXPECT_EQ(store.keys(), (std::vector<std::string>{"ns/a"}));
}

TEST(Store, KeepsObjectsCompressedAgainstItsFirstAndReadsThemBackWhole) {
  Store store;
  auto big = [](const std::string& name, const std::string& rv) {
    nlohmann::json o = obj(name, rv);
    o["spec"]["labels"] = {{"app.kubernetes.io/managed-by", "heartbeat-operator"},
                           {"heartbeat.dev/agent", "agent-" + name}};
    o["status"] = {{"phase", "Succeeded"}, {"reason", "Completed"}, {"output", name + " done"}};
    return o;
  };
  store.replace({big("a", "1"), big("b", "2")});
  // Events take both paths: parsed and scanned.
  store.apply({WatchEventType::kAdded, big("c", "3")});
  const std::string line = nlohmann::json{{"type", "ADDED"}, {"object", big("d", "4")}}.dump();
  auto scanned = scan_watch_event(line);
  ASSERT_TRUE(scanned);
  store.apply(*scanned);
  for (const std::string name : {"a", "b", "c", "d"}) {
    nlohmann::json expected =
        big(name, store.get("ns/" + name)->at("metadata").at("resourceVersion"));
    expected["metadata"].erase("managedFields");
    EXPECT_EQ(*store.get("ns/" + name), expected) << name;
  }
  EXPECT_EQ(store.list().size(), 4u);
  Store::Footprint footprint = store.footprint();
  EXPECT_GT(footprint.text_bytes, 0u);
  // Each object but the first is mostly the first one's text.
  EXPECT_LT(footprint.stored_bytes * 2, footprint.text_bytes);
}

TEST(Store, ForEachVisitsEveryObjectInKeyOrderWithoutHoldingTheLock) {
  Store store;
  store.replace({obj("b", "2"), obj("c", "3"), obj("a", "1")});
  std::vector<std::string> seen;
  store.for_each([&](const nlohmann::json& o) {
    seen.push_back(o["metadata"]["name"].get<std::string>() + "@" +
                   o["metadata"]["resourceVersion"].get<std::string>());
    // The callback may read and write the store: fn runs outside its lock,
    // on the objects as they were when the pass began.
    store.apply({WatchEventType::kModified, obj("c", "9")});
    EXPECT_TRUE(store.get("ns/a"));
  });
  EXPECT_EQ(seen, (std::vector<std::string>{"a@1", "b@2", "c@3"}));
  EXPECT_EQ(store.get("ns/c")->at("metadata").at("resourceVersion"), "9");
}

TEST(StoredObject, HoldsKeyVersionAndTextInOneBlockAndIsFoundByKey) {
  const TextDictionary dictionary("{\"metadata\":{}}");
  StoredObjects objects;
  for (const std::string name : {"b", "a", "c"}) {
    objects.put(StoredObject::make("ns/" + name, "rv-" + name,
                                   dictionary.compress("{\"n\":\"" + name + "\"}"))
                    ->view());
  }
  ASSERT_EQ(objects.size(), 3u);
  std::vector<std::string> keys;
  objects.for_each([&keys](const StoredEntryView& e) { keys.emplace_back(e.key); });
  EXPECT_EQ(keys, (std::vector<std::string>{"ns/a", "ns/b", "ns/c"}));  // ordered by key
  const std::optional<StoredEntryView> c = objects.find("ns/c");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->resource_version, "rv-c");
  EXPECT_EQ(dictionary.decompress(c->text), "{\"n\":\"c\"}");
  EXPECT_FALSE(objects.find("ns/d"));
  EXPECT_FALSE(objects.find("ns/"));
  // Empty parts are fine.
  const StoredObjectPtr empty = StoredObject::make("", "", CompressedText{});
  EXPECT_EQ(empty->key(), "");
  EXPECT_EQ(empty->resource_version(), "");
  EXPECT_EQ(dictionary.decompress(empty->text()), "");
  objects.put(empty->view());
  EXPECT_TRUE(objects.contains(""));
  // A copy of a view holds the same entry.
  const StoredObjectPtr copy = StoredObject::make(*objects.find("ns/c"));
  EXPECT_EQ(copy->key(), "ns/c");
  EXPECT_EQ(dictionary.decompress(copy->text()), "{\"n\":\"c\"}");
}

// Replacing an object keeps one per key; erasing says whether there was
// one; a moved-from set is empty and a moved-to one owns what it got (the
// sanitizer pass finds a leak or a double free).
TEST(StoredObject, PutReplacesEraseFreesAndMovesHandOver) {
  StoredObjects objects;
  objects.put(StoredObject::make("ns/a", "1", CompressedText{})->view());
  objects.put(StoredObject::make("ns/b", "1", CompressedText{})->view());
  objects.put(StoredObject::make("ns/a", "2", CompressedText{})->view());
  ASSERT_EQ(objects.size(), 2u);
  EXPECT_EQ(objects.find("ns/a")->resource_version, "2");
  EXPECT_TRUE(objects.erase("ns/b"));
  EXPECT_FALSE(objects.erase("ns/b"));
  StoredObjects moved(std::move(objects));
  EXPECT_EQ(objects.size(), 0u);  // NOLINT(bugprone-use-after-move): its state is the contract
  EXPECT_TRUE(moved.contains("ns/a"));
  StoredObjects other;
  other.put(StoredObject::make("ns/z", "9", CompressedText{})->view());
  other = std::move(moved);  // the old contents freed
  EXPECT_FALSE(other.contains("ns/z"));
  EXPECT_TRUE(other.contains("ns/a"));
  other.swap(objects);
  EXPECT_EQ(other.size(), 0u);
  EXPECT_EQ(objects.size(), 1u);
}

// The first object makes the dictionary; one made to be useless (a runner
// can write such a Lease) leaves the others larger, never different.
TEST(Store, AHostileFirstObjectChangesOnlyTheSizeOfTheOthers) {
  Store store;
  nlohmann::json junk = obj("junk", "1");
  std::string noise;
  for (int i = 0; i < 20000; ++i) noise.push_back(static_cast<char>('!' + (i * 7919) % 90));
  junk["spec"]["noise"] = noise;  // longer than the dictionary's bound
  store.apply({WatchEventType::kAdded, junk});
  for (int i = 0; i < 50; ++i) {
    store.apply({WatchEventType::kAdded, obj("o" + std::to_string(i), std::to_string(10 + i), i)});
  }
  for (int i = 0; i < 50; ++i) {
    nlohmann::json expected = obj("o" + std::to_string(i), std::to_string(10 + i), i);
    expected["metadata"].erase("managedFields");
    EXPECT_EQ(*store.get("ns/o" + std::to_string(i)), expected);
  }
  EXPECT_EQ(store.get("ns/junk")->at("spec").at("noise"), noise);
}

TEST(Store, ClusterScopedKeyHasNoNamespace) {
  EXPECT_EQ(Store::key_of({{"metadata", {{"name", "n"}}}}), "n");
}

nlohmann::json pod(const std::string& rv) {
  return {{"metadata",
           {{"name", "p"},
            {"namespace", "ns"},
            {"resourceVersion", rv},
            {"annotations", {{"heartbeat.dev/run-name", "r"}, {"heartbeat.dev/context", "big"}}}}},
          {"spec", {{"containers", nlohmann::json::array({{{"name", "runner"}}})}}}};
}

// Keeps metadata but the context annotation, and no spec.
void drop_context_and_spec(nlohmann::json& o) {
  o["metadata"]["annotations"].erase("heartbeat.dev/context");
  o.erase("spec");
}

TEST(StoreProjection, ListWatchAndScannedEventsAreAllProjected) {
  Store store;
  store.set_projection(drop_context_and_spec);
  std::vector<std::string> seen;
  StoreHandlers handlers;
  handlers.on_add = [&](const nlohmann::json& o) { seen.push_back(o.dump()); };
  handlers.on_update = [&](const nlohmann::json& old, const nlohmann::json& o) {
    seen.push_back(old.dump());
    seen.push_back(o.dump());
  };
  store.set_handlers(handlers);
  const nlohmann::json kept = {{"metadata",
                                {{"name", "p"},
                                 {"namespace", "ns"},
                                 {"resourceVersion", "?"},
                                 {"annotations", {{"heartbeat.dev/run-name", "r"}}}}}};
  auto expect_kept = [&](const std::string& rv) {
    nlohmann::json want = kept;
    want["metadata"]["resourceVersion"] = rv;
    EXPECT_EQ(*store.get("ns/p"), want);
  };

  store.replace({pod("1")});
  expect_kept("1");
  store.apply(WatchEvent{WatchEventType::kModified, pod("2")});
  expect_kept("2");
  const std::string line = nlohmann::json{{"type", "MODIFIED"}, {"object", pod("3")}}.dump();
  auto scanned = scan_watch_event(line);
  ASSERT_TRUE(scanned);
  store.apply(*scanned);
  expect_kept("3");
  ASSERT_EQ(seen.size(), 5u);  // the handlers see the projected objects too
  for (const std::string& o : seen) {
    EXPECT_EQ(o.find("big"), std::string::npos) << o;
    EXPECT_EQ(o.find("spec"), std::string::npos) << o;
  }
}

TEST(StoreProjection, ADeletionIsReportedProjected) {
  Store store;
  store.set_projection(drop_context_and_spec);
  std::string deleted;
  StoreHandlers handlers;
  handlers.on_delete = [&](const nlohmann::json& o) { deleted = o.dump(); };
  store.set_handlers(handlers);
  store.apply(WatchEvent{WatchEventType::kAdded, pod("1")});
  store.apply(WatchEvent{WatchEventType::kDeleted, pod("2")});
  EXPECT_FALSE(store.get("ns/p"));
  EXPECT_NE(deleted.find("heartbeat.dev/run-name"), std::string::npos);
  EXPECT_EQ(deleted.find("big"), std::string::npos);
}

}  // namespace
}  // namespace hb::kube
