// Front-coded key lists give back exactly the keys pushed, in order: sorted
// or not, empty keys, repeats, a key that is a prefix of the one before, and
// keys long enough for multi-byte lengths.
#include "kube/front_coding.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

namespace hb::kube {
namespace {

std::vector<std::string> read_back(const FrontCodedKeys& keys) {
  std::vector<std::string> out;
  for (FrontCodedKeys::Cursor at(keys); at.next();) out.push_back(at.key());
  return out;
}

FrontCodedKeys pushed(const std::vector<std::string>& keys) {
  FrontCodedKeys out;
  for (const std::string& key : keys) out.push_back(key);
  return out;
}

TEST(FrontCodedKeys, GivesBackTheKeysInTheOrderPushed) {
  const std::vector<std::string> keys = {"ns/agent-1-a",
                                         "ns/agent-1-b",
                                         "ns/agent-1",
                                         "",
                                         "ns/agent-1",
                                         "ns/agent-1",
                                         "other/x",
                                         std::string(300, 'k'),
                                         std::string(299, 'k') + "z"};
  const FrontCodedKeys list = pushed(keys);
  EXPECT_EQ(list.size(), keys.size());
  EXPECT_EQ(read_back(list), keys);
}

TEST(FrontCodedKeys, AnEmptyListHasNoKeys) {
  const FrontCodedKeys list;
  EXPECT_TRUE(list.empty());
  EXPECT_TRUE(read_back(list).empty());
}

TEST(FrontCodedKeys, RandomKeysRoundTripAndSortedOnesShrink) {
  std::mt19937 random(7);
  std::vector<std::string> keys;
  std::size_t whole_bytes = 0;
  for (int i = 0; i < 5000; ++i) {
    std::string key = "heartbeat-fleet/agent-" + std::to_string(random() % 400) + "-";
    key += std::to_string(1'700'000'000 + random() % 100'000);
    if (random() % 50 == 0) key.assign(random() % 200, static_cast<char>('a' + random() % 26));
    whole_bytes += key.size();
    keys.push_back(std::move(key));
  }
  EXPECT_EQ(read_back(pushed(keys)), keys);
  std::sort(keys.begin(), keys.end());
  const FrontCodedKeys sorted = pushed(keys);
  EXPECT_EQ(read_back(sorted), keys);
  // What the relist's lists rely on: sorted keys with long shared prefixes
  // take a fraction of their whole length.
  EXPECT_LT(sorted.bytes(), whole_bytes / 2);
}

TEST(FrontCoding, AKeyCodedAgainstItsPredecessorDecodesAgainstIt) {
  std::string bytes;
  put_front_coded(bytes, "", "default/agent-a");
  put_front_coded(bytes, "default/agent-a", "default/agent-b");
  const char* at = bytes.data();
  std::string key;
  get_front_coded(at, bytes.data() + bytes.size(), key);
  EXPECT_EQ(key, "default/agent-a");
  get_front_coded(at, bytes.data() + bytes.size(), key);
  EXPECT_EQ(key, "default/agent-b");
  EXPECT_EQ(at, bytes.data() + bytes.size());
}

TEST(FrontCodingDeathTest, ATruncatedRecordAbortsRatherThanReadingPastItsEnd) {
  std::string bytes;
  put_front_coded(bytes, "", "default/agent-a");
  bytes.pop_back();
  EXPECT_DEATH(
      {
        const char* at = bytes.data();
        std::string key;
        get_front_coded(at, bytes.data() + bytes.size(), key);
      },
      "does not decode");
}

}  // namespace
}  // namespace hb::kube
