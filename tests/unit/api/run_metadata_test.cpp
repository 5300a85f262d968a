#include "api/run_metadata.h"

#include <gtest/gtest.h>

namespace hb::api {
namespace {

using nlohmann::json;

TEST(RunMetadata, SmallStringPairsAreUsable) {
  EXPECT_EQ(run_metadata_problem({{"taskId", "T-42"}, {"priority", "high"}}), "");
  EXPECT_EQ(run_metadata_problem(json::object()), "");
  EXPECT_EQ(run_metadata_problem({{std::string(63, 'k'), std::string(256, 'v')}}), "");
}

TEST(RunMetadata, EachBoundIsRefusedNamingIt) {
  json many = json::object();
  for (int i = 0; i < 17; ++i) many["k" + std::to_string(i)] = "v";
  EXPECT_NE(run_metadata_problem(many).find("at most 16 entries"), std::string::npos);
  EXPECT_NE(run_metadata_problem({{std::string(64, 'k'), "v"}}).find("1 to 63 characters"),
            std::string::npos);
  EXPECT_NE(
      run_metadata_problem({{"k", std::string(257, 'v')}}).find("metadata.k is longer than 256"),
      std::string::npos);
  EXPECT_NE(run_metadata_problem({{"k", 3}}).find("metadata.k must be a string"),
            std::string::npos);
  EXPECT_NE(run_metadata_problem(json::array()).find("object of strings"), std::string::npos);
  for (const char* key : {"", "-lead", "trail.", "sp ace", "new\nline", "caf\xc3\xa9"}) {
    EXPECT_NE(run_metadata_problem({{key, "v"}}), "") << key;
  }
}

TEST(RunMetadata, WhatARunStoresIsCutToTheUsableEntries) {
  json stored = {{"ok", "1"}, {"bad key", "2"}, {"long", std::string(300, 'x')}, {"n", 5}};
  EXPECT_EQ(usable_run_metadata(&stored), (RunMetadata{{"ok", "1"}}));
  json many = json::object();
  for (int i = 0; i < 40; ++i) many["k" + std::to_string(i)] = "v";
  EXPECT_EQ(usable_run_metadata(&many).size(), kRunMetadataEntriesMax);
  EXPECT_TRUE(usable_run_metadata(nullptr).empty());
  json text = "not an object";
  EXPECT_TRUE(usable_run_metadata(&text).empty());
}

}  // namespace
}  // namespace hb::api
