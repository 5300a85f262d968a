// The text cut keeps exactly the named members of an object's JSON text,
// copied as they were, and skips the rest whatever it holds.
#include "kube/text_cut.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace hb::kube {
namespace {

using Json = nlohmann::json;

const TextCut kCut = {
    {"kind", {}},
    {"metadata", TextCut{{"name", {}}, {"annotations", TextCut{{"keep/me", {}}}}}},
    {"status", TextCut{{"phase", {}}}}};

TEST(TextCut, KeepsTheNamedMembersAndSkipsTheRest) {
  const std::string text =
      R"({"kind":"Pod","spec":{"a":[1,{"b":"}]"},"\"{["],"c":null},)"
      R"("metadata":{"name":"x","uid":"u","annotations":{"keep/me":"v","drop":"w"}},)"
      R"("status":{"phase":"Running","hostIP":"10.0.0.1"},"extra":-1.5e3})";
  EXPECT_EQ(Json::parse(cut_text(text, kCut)),
            Json::parse(R"({"kind":"Pod","metadata":{"name":"x","annotations":{"keep/me":"v"}},)"
                        R"("status":{"phase":"Running"}})"));
}

TEST(TextCut, AKeptValueThatIsNotAnObjectIsKeptWhole) {
  EXPECT_EQ(Json::parse(cut_text(R"({"metadata":["a",{"b":1}],"status":"odd","x":1})", kCut)),
            Json::parse(R"({"metadata":["a",{"b":1}],"status":"odd"})"));
}

TEST(TextCut, WhitespaceAndEmptyObjects) {
  EXPECT_EQ(
      Json::parse(cut_text(" { \"kind\" : \"Job\" , \"status\" : { } , \"spec\" : { } } ", kCut)),
      Json::parse(R"({"kind":"Job","status":{}})"));
  EXPECT_EQ(cut_text("{}", kCut), "{}");
}

TEST(TextCut, ANameWithAnEscapeIsKeptWhole) {
  // "kin\u0064" is "kind": kept, so the parse sees what it would have.
  const std::string text = R"({"kin\u0064":"Pod","sp\"ec":{"x":1}})";
  EXPECT_EQ(Json::parse(cut_text(text, kCut)), Json::parse(text));
}

TEST(TextCut, TextThatIsNotAnObjectIsReturnedWhole) {
  for (const std::string text : {"[1,2]", "\"s\"", "{\"kind\":", "{\"kind\":\"a\"} x", ""}) {
    EXPECT_EQ(cut_text(text, kCut), text) << text;
  }
}

}  // namespace
}  // namespace hb::kube
