// The paged store of entries against a plain map: any mix of puts, replaces
// and erases, keys that share long prefixes or none, texts from empty to
// larger than a page, leaves the same entries in the same order.
#include "kube/stored_objects.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>
#include <vector>

namespace hb::kube {
namespace {

struct Expected {
  std::string resource_version, bytes;
  uint32_t text_bytes = 0;
  bool compressed = false, identity_elided = false;
};
using Model = std::map<std::string, Expected>;

void put(StoredObjects& objects, Model& model, const std::string& key, const Expected& e) {
  objects.put(StoredObject::make(key, e.resource_version,
                                 CompressedTextView(e.bytes, e.text_bytes, e.compressed),
                                 e.identity_elided)
                  ->view());
  model[key] = e;
}

void expect_same(const StoredObjects& objects, const Model& model) {
  ASSERT_EQ(objects.size(), model.size());
  auto next = model.begin();
  objects.for_each([&](const StoredEntryView& e) {
    ASSERT_NE(next, model.end());
    EXPECT_EQ(e.key, next->first);
    EXPECT_EQ(e.resource_version, next->second.resource_version);
    EXPECT_EQ(e.text.bytes, next->second.bytes);
    EXPECT_EQ(e.text.text_bytes, next->second.text_bytes);
    EXPECT_EQ(e.text.compressed, next->second.compressed);
    EXPECT_EQ(e.identity_elided, next->second.identity_elided);
    ++next;
  });
  EXPECT_EQ(next, model.end());
  EXPECT_LE(objects.pages(), objects.size());  // no page is empty
}

std::string random_bytes(std::mt19937& rng, std::size_t n) {
  std::string out(n, '\0');
  for (char& c : out) c = static_cast<char>(rng() & 0xff);  // NULs and bytes >= 0x80 too
  return out;
}

// Keys like a fleet's: namespaces, agents, runs named after them, plus
// odd ones (empty, bytes >= 0x80, one a prefix of another).
std::string random_key(std::mt19937& rng) {
  switch (rng() % 8) {
    case 0:
      return random_bytes(rng, rng() % 6);
    case 1:
      return "ns-" + std::to_string(rng() % 3) + "/agent-" + std::to_string(rng() % 5);
    default:
      return "ns-" + std::to_string(rng() % 3) + "/agent-" + std::to_string(rng() % 5) + "-" +
             std::to_string(29000000 + rng() % 40);
  }
}

Expected random_entry(std::mt19937& rng) {
  Expected e;
  e.resource_version = std::to_string(rng() % 100000000);
  const std::size_t sizes[] = {0, 1, 60, 127, 128, 300, 2000, 5000};
  e.bytes = random_bytes(rng, sizes[rng() % 8]);
  e.text_bytes = static_cast<uint32_t>(rng());
  e.compressed = rng() % 2 == 0;
  e.identity_elided = rng() % 2 == 0;
  return e;
}

TEST(StoredObjects, AnyMixOfWritesMatchesAMap) {
  for (uint32_t seed = 1; seed <= 40; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937 rng(seed);
    StoredObjects objects;
    Model model;
    for (int step = 0; step < 400; ++step) {
      const std::string key = random_key(rng);
      if (rng() % 3 == 0) {
        EXPECT_EQ(objects.erase(key), model.erase(key) == 1);
      } else {
        put(objects, model, key, random_entry(rng));
      }
      const std::string probe = random_key(rng);
      const auto found = objects.find(probe);
      ASSERT_EQ(found.has_value(), model.count(probe) == 1) << step;
      if (found) {
        EXPECT_EQ(found->resource_version, model.at(probe).resource_version);
      }
      if (step % 20 == 0) expect_same(objects, model);
    }
    expect_same(objects, model);
    // Emptied in any order, it holds nothing and no page.
    std::vector<std::string> keys;
    for (const auto& [key, e] : model) keys.push_back(key);
    std::shuffle(keys.begin(), keys.end(), rng);
    for (const std::string& key : keys) EXPECT_TRUE(objects.erase(key));
    EXPECT_EQ(objects.size(), 0u);
    EXPECT_EQ(objects.pages(), 0u);
  }
}

// A relist puts its entries in key order: each page is filled before the
// next starts, and erasing most of them merges what is left.
TEST(StoredObjects, KeyOrderFillsPagesAndErasingMergesThem) {
  StoredObjects objects;
  Model model;
  std::vector<std::string> keys;
  for (int i = 0; i < 1000; ++i) {
    char name[32];
    std::snprintf(name, sizeof name, "ns/agent-%04d", i);
    keys.emplace_back(name);
    put(objects, model, name, Expected{"1", "text", 4, false, false});
  }
  EXPECT_EQ(objects.pages(), (1000 + kStoredPageEntriesMax - 1) / kStoredPageEntriesMax);
  for (std::size_t i = 0; i < keys.size(); ++i) {
    if (i % 10 != 0) {
      objects.erase(keys[i]);
      model.erase(keys[i]);
    }
  }
  expect_same(objects, model);
  // 100 left: merged into pages at least a quarter full, not 63 of 1 or 2.
  EXPECT_LE(objects.pages(), 100 / (kStoredPageEntriesMax / 4));
}

// Entries larger than a page's bytes each get a page; small ones share.
TEST(StoredObjects, LargeEntriesSplitPagesBySize) {
  StoredObjects objects;
  Model model;
  std::mt19937 rng(7);
  for (int i = 0; i < 8; ++i) {
    put(objects, model, "ns/big-" + std::to_string(i),
        Expected{"1", random_bytes(rng, kStoredPageBytesMax), 1, true, false});
  }
  expect_same(objects, model);
  EXPECT_EQ(objects.pages(), 8u);
}

}  // namespace
}  // namespace hb::kube
