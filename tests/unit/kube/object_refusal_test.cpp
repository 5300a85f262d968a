// One bad object is one object's problem (issue 55, item 3): an Agent
// nested past kKubeObjectDepthMax, too large or malformed is skipped and
// reported by name, in a list page and in a watch alike, and the two paths
// decide the same for the same object.
#include "kube/object_refusal.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "kube/list_page_splitter.h"
#include "kube/object_limits.h"
#include "kube/watch_decoder.h"
#include "kube/watch_refusal.h"
#include "kube/watch_scan.h"

namespace hb::kube {
namespace {

using json = nlohmann::json;

// `levels` of nesting in total: the object itself is 1, spec 2, runtime 3,
// volumes 4, the volume 5, then nested objects to the bound.
std::string agent_text(const std::string& ns, const std::string& name, int levels) {
  std::string deep;
  for (int i = 5; i < levels; ++i) deep += R"({"a":)";
  deep += "1";
  for (int i = 5; i < levels; ++i) deep += "}";
  return R"({"apiVersion":"heartbeat.dev/v1alpha1","kind":"Agent","metadata":{"name":")" + name +
         R"(","namespace":")" + ns + R"(","uid":"0e0c2a8e-1111-4c0a-9d8e-6f1f2b7c9a10",)" +
         R"("resourceVersion":"17"},"spec":{"runtime":{"volumes":[{"name":"v","csi":)" + deep +
         "}]}}}";
}

std::string page_of(const std::vector<std::string>& items) {
  std::string body = R"({"kind":"AgentList","metadata":{"resourceVersion":"42"},"items":[)";
  for (std::size_t i = 0; i < items.size(); ++i) body += (i ? "," : "") + items[i];
  return body + "]}";
}

struct Listed {
  std::vector<std::string> names;  // handed to the item handler
  std::vector<std::pair<RefusalReason, PeekedMetadata>> refused;
  std::optional<ListPageEnd> end;
  std::string problem;
};

Listed list(const std::string& body, std::size_t piece_bytes, bool skip_refused = true) {
  Listed out;
  ListPageSplitter splitter(
      [&out](std::string_view item) {
        out.names.push_back(json::parse(item)["metadata"]["name"].get<std::string>());
        return true;
      },
      [&out, skip_refused](RefusalReason reason, std::string_view kept) {
        out.refused.emplace_back(reason, peek_metadata(kept));
        return skip_refused;
      });
  bool going = true;
  for (std::size_t at = 0; going && at < body.size(); at += piece_bytes) {
    going = splitter.feed(std::string_view(body).substr(at, piece_bytes));
  }
  out.end = splitter.finish();
  out.problem = splitter.problem();
  return out;
}

const int kTooDeep = 130;

TEST(ObjectRefusal, ATooDeepItemBetweenTwoGoodOnesIsSkippedAndNamed) {
  const std::string body =
      page_of({agent_text("team-a", "good-1", 8), agent_text("team-b", "bad", kTooDeep),
               agent_text("team-a", "good-2", 8)});
  for (std::size_t piece : {std::size_t{1}, std::size_t{7}, std::size_t{4096}, body.size()}) {
    const Listed l = list(body, piece);
    ASSERT_TRUE(l.end.has_value()) << piece << ": " << l.problem;
    EXPECT_EQ(l.end->resource_version, "42");
    EXPECT_EQ(l.names, (std::vector<std::string>{"good-1", "good-2"}));
    ASSERT_EQ(l.refused.size(), 1u);
    EXPECT_EQ(l.refused[0].first, RefusalReason::kTooDeep);
    EXPECT_EQ(l.refused[0].second.name, "bad");
    EXPECT_EQ(l.refused[0].second.namespace_, "team-b");
    EXPECT_EQ(l.refused[0].second.uid, "0e0c2a8e-1111-4c0a-9d8e-6f1f2b7c9a10");
    EXPECT_EQ(l.refused[0].second.resource_version, "17");
  }
}

// Positive control: the item is past the bound, and a splitter that does
// not skip refused items (the behaviour before) fails the whole page on it.
TEST(ObjectRefusal, ControlWithoutSkippingTheSamePageFails) {
  const std::string bad = agent_text("team-b", "bad", kTooDeep);
  EXPECT_EQ(measure_object_text(bad).depth, kTooDeep);
  EXPECT_GT(kTooDeep, kKubeObjectDepthMax);
  EXPECT_TRUE(json::accept(bad));  // a parser without a bound takes it
  const std::string body =
      page_of({agent_text("team-a", "good-1", 8), bad, agent_text("team-a", "good-2", 8)});
  const Listed l = list(body, 4096, /*skip_refused=*/false);
  EXPECT_FALSE(l.end.has_value());
  EXPECT_NE(l.problem.find("nested more than 128"), std::string::npos) << l.problem;
  EXPECT_EQ(l.names, std::vector<std::string>{"good-1"});

  ListPageSplitter no_handler([](std::string_view) { return true; });
  EXPECT_FALSE(no_handler.feed(body));
}

TEST(ObjectRefusal, ATooLargeItemIsSkippedNamedAndNotHeldWhole) {
  std::string large = agent_text("team-b", "huge", 8);
  large.insert(large.size() - 1, R"(,"pad":")" + std::string(kKubeObjectBytesMax, 'x') + "\"");
  const std::string body =
      page_of({agent_text("team-a", "good-1", 8), large, agent_text("team-a", "good-2", 8)});
  std::size_t kept_bytes = 0;
  std::vector<std::string> names;
  ListPageSplitter splitter(
      [&names](std::string_view item) {
        names.push_back(json::parse(item)["metadata"]["name"].get<std::string>());
        return true;
      },
      [&](RefusalReason reason, std::string_view kept) {
        EXPECT_EQ(reason, RefusalReason::kTooLarge);
        EXPECT_EQ(peek_metadata(kept).name, "huge");
        kept_bytes = kept.size();
        return true;
      });
  for (std::size_t at = 0; at < body.size(); at += 1 << 20) {
    ASSERT_TRUE(splitter.feed(std::string_view(body).substr(at, 1 << 20))) << splitter.problem();
  }
  ASSERT_TRUE(splitter.finish().has_value()) << splitter.problem();
  EXPECT_EQ(names, (std::vector<std::string>{"good-1", "good-2"}));
  EXPECT_EQ(kept_bytes, kListItemBytesMax);
  EXPECT_EQ(refusal_of_text(large), RefusalReason::kTooLarge);
}

// Around the items, nothing changed: a body that is not a list page fails.
TEST(ObjectRefusal, EnvelopeFailuresStillFailThePage) {
  const std::string nested = std::string(kTooDeep, '[') + std::string(kTooDeep, ']');
  EXPECT_FALSE(list(R"({"metadata":{"x":)" + nested + R"(},"items":[]})", 5).end.has_value());
  const std::string good = agent_text("n", "good", 8);
  EXPECT_FALSE(list(R"({"items":[)" + good + ",7]}", 5).end.has_value());
  EXPECT_FALSE(list(R"({"items":[)" + good + "}", 5).end.has_value());
  EXPECT_FALSE(list(R"({"items":[)" + good, 5).end.has_value());
  EXPECT_TRUE(list(R"({"items":[)" + good + "]}", 5).end.has_value());  // control
}

// The watch's decision on one event's object, as the informer takes it:
// the fast scanner's, else refused_watch_object's, else the full decoder's.
std::optional<RefusalReason> watch_decision(const std::string& object_text) {
  const std::string line = R"({"type":"MODIFIED","object":)" + object_text + "}";
  if (auto scanned = scan_watch_event(line)) {
    return refusal_for(ObjectShape{scanned->object_text.size(), 1});
  }
  if (auto refused = refused_watch_object(line)) {
    EXPECT_EQ(refused->type, WatchEventType::kModified);
    EXPECT_EQ(refused->object_text, object_text);
    return refused->reason;
  }
  EXPECT_TRUE(decode_watch_event(line).ok()) << "neither refused nor taken";
  return std::nullopt;
}

std::optional<RefusalReason> list_decision(const std::string& object_text) {
  std::optional<RefusalReason> decided;
  bool taken = false;
  ListPageSplitter splitter(
      [&](std::string_view item) {
        // As Client::list_page: an item that does not parse is malformed.
        if (!json::accept(item)) decided = RefusalReason::kMalformed;
        taken = !decided;
        return true;
      },
      [&](RefusalReason reason, std::string_view) {
        decided = reason;
        return true;
      });
  const std::string body = page_of({object_text});
  for (std::size_t at = 0; at < body.size(); at += 3) {
    EXPECT_TRUE(splitter.feed(std::string_view(body).substr(at, 3))) << splitter.problem();
  }
  EXPECT_TRUE(splitter.finish().has_value()) << splitter.problem();
  EXPECT_NE(taken, decided.has_value());
  return decided;
}

TEST(ObjectRefusal, ListAndWatchDecideTheSameForTheSameObject) {
  std::vector<std::string> objects;
  for (int levels : {6, 100, 127, 128, 129, 130, 400}) {
    objects.push_back(agent_text("team-a", "a", levels));
  }
  // Brackets and quotes inside strings are no nesting.
  objects.push_back(R"({"metadata":{"name":"s"},"x":")" + std::string(300, '[') + R"(\"{"})");
  objects.push_back(R"({"metadata":{"name":"arr"},"x":)" + std::string(127, '[') +
                    std::string(127, ']') + "}");
  objects.push_back(R"({"metadata":{"name":"arr"},"x":)" + std::string(128, '[') +
                    std::string(128, ']') + "}");
  // Malformed, with the event around it sound.
  objects.push_back(R"({"metadata":{"name":"utf8"},"x":")" + std::string("\xff\xfe") + "\"}");
  objects.push_back(R"({"metadata":{"name":"num"},"x":1e400})");
  objects.push_back(R"({"metadata":{"name":"esc"},"x":"\q"})");
  for (const std::string& object : objects) {
    const std::optional<RefusalReason> from_list = list_decision(object);
    EXPECT_EQ(from_list, watch_decision(object)) << object.substr(0, 160);
    EXPECT_EQ(from_list, refusal_of_text(object)) << object.substr(0, 160);
  }
  EXPECT_EQ(list_decision(agent_text("n", "a", 128)), std::nullopt);
  EXPECT_EQ(list_decision(agent_text("n", "a", 129)), RefusalReason::kTooDeep);
  EXPECT_EQ(list_decision(objects[10]), RefusalReason::kMalformed);
}

// Random objects around the bound (nesting of objects and arrays, strings
// holding brackets, quotes and escapes, now and then a defect): the list,
// the watch and refusal_of_text agree on every one.
// The first member of each container goes on to `levels_left` (the spine);
// the others stay shallow.
std::string random_value(std::mt19937& rng, int levels_left, bool spine) {
  const int pick = static_cast<int>(rng() % 10);
  if (levels_left <= 0 || (!spine && pick < 3)) {
    static const char* const kScalars[] = {
        "1", "-2.5e3", "true", "null", R"("a]}\"{[")", R"("\u00e9\n")", "\"caf\xc3\xa9\"", "0"};
    return kScalars[rng() % 8];
  }
  const int members = 1 + static_cast<int>(rng() % 2);
  std::string out = pick < 6 ? "[" : "{";
  for (int i = 0; i < members; ++i) {
    if (i) out += ",";
    if (out[0] == '{') out += "\"k" + std::to_string(i) + "\":";
    out += i == 0 ? random_value(rng, levels_left - 1, spine)
                  : random_value(rng, std::min(levels_left - 1, 3), false);
  }
  return out + (out[0] == '[' ? "]" : "}");
}

TEST(ObjectRefusal, ListAndWatchAgreeOnRandomObjectsAroundTheBound) {
  std::mt19937 rng(55);
  int refused = 0, taken = 0;
  for (int i = 0; i < 300; ++i) {
    const int levels = kKubeObjectDepthMax - 4 + static_cast<int>(rng() % 8);
    std::string object = R"({"metadata":{"name":"r"},"x":)" + random_value(rng, levels, true) + "}";
    if (rng() % 10 == 0) object.insert(object.size() / 2, "\xff");  // a defect, if in a string
    const std::optional<RefusalReason> from_list = list_decision(object);
    ASSERT_EQ(from_list, watch_decision(object)) << object;
    ASSERT_EQ(from_list, refusal_of_text(object)) << object;
    (from_list ? refused : taken) += 1;
  }
  EXPECT_GT(refused, 20);  // both sides of the bound were tried
  EXPECT_GT(taken, 20);
}

// Positive control for the watch: the fast scanner declines the deep event,
// and the full decoder alone (the slow path before) would take it.
TEST(ObjectRefusal, ControlTheFullDecoderAloneTakesTheDeepEvent) {
  const std::string line =
      R"({"type":"ADDED","object":)" + agent_text("team-b", "bad", kTooDeep) + "}";
  EXPECT_FALSE(scan_watch_event(line).has_value());
  EXPECT_EQ(decode_watch_event(line).value().object["metadata"]["name"], "bad");
  const auto refused = refused_watch_object(line);
  ASSERT_TRUE(refused.has_value());
  EXPECT_EQ(refused->reason, RefusalReason::kTooDeep);
  EXPECT_EQ(peek_metadata(refused->object_text).name, "bad");
}

// What is not one event stays the decoder's to name (the stream relists).
TEST(ObjectRefusal, ABrokenEventIsNotTakenForARefusedObject) {
  const std::string deep = agent_text("n", "a", kTooDeep);
  for (const std::string& line : {
           R"({"type":"ADDED","object":)" + deep,                 // cut short
           R"({"type":"ADDED","object":)" + deep + "} trailing",  // more after it
           R"({"type":"ADDED","object":)" + deep + ",}",          // a stray comma
           R"({"object":)" + deep + "}",                          // no type
           R"({"type":"BOOKMARK","object":)" + deep + "}",
           R"({"type":"ERROR","object":)" + deep + "}",
       }) {
    EXPECT_FALSE(refused_watch_object(line).has_value()) << line.substr(0, 60);
  }
  const std::string escaped_type = R"({"typ\u0065":"ADD\u0045D","object":)" + deep + "}";
  EXPECT_TRUE(refused_watch_object(escaped_type).has_value());
}

TEST(ObjectRefusal, TheIdentityIsReadWithoutAParserAndShownSafely) {
  const PeekedMetadata m =
      peek_metadata(R"({"spec":{"metadata":{"name":"inner"}},"metadata":{"labels":{"name":"x"},)"
                    R"("name":"a\u0062c","namespace":"ns","uid":"0e0c-aa"},"status":{}})");
  EXPECT_EQ(m.name, "abc");
  EXPECT_EQ(m.namespace_, "ns");
  EXPECT_EQ(m.uid, "0e0c-aa");
  EXPECT_EQ(store_key(m), "ns/abc");
  EXPECT_TRUE(addressable(m));

  PeekedMetadata hostile;
  hostile.namespace_ = "ns";
  hostile.name = "x\r\nHost: a\"\\" + std::string(300, 'y');
  hostile.uid = "0e0c";
  const std::string s = shown_key(hostile);
  EXPECT_EQ(s.find_first_of("\r\n\"\\"), s.find("\\x"));  // only the escapes' backslashes
  EXPECT_EQ(s.find('\r'), std::string::npos);
  EXPECT_LE(s.size(), 3 + kShownBytesMax * 4 + 3);
  EXPECT_FALSE(addressable(hostile));
  hostile.name = "Upper";
  EXPECT_FALSE(addressable(hostile));
  hostile.name = "fine.name-1";
  EXPECT_TRUE(addressable(hostile));
  hostile.uid = "../../x";
  EXPECT_FALSE(addressable(hostile));

  // However deep, the peek does not recurse and still finds the name.
  const std::string very_deep = R"({"spec":)" + std::string(100000, '[') +
                                std::string(100000, ']') +
                                R"(,"metadata":{"name":"late","namespace":"n"}})";
  EXPECT_EQ(peek_metadata(very_deep).name, "late");
  EXPECT_EQ(refusal_of_text(very_deep), RefusalReason::kTooDeep);
}

}  // namespace
}  // namespace hb::kube
