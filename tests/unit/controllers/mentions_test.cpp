// @mentions: the agent writes the output, so the parser, the depth and the
// opt-in are tested against what a hostile agent would write.
#include "controllers/model/mentions.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "controllers/model/agent_spec.h"
#include "tests/unit/controllers/fixtures.h"

namespace hb::controllers {
namespace {

using namespace testing;
using ::testing::HasSubstr;
using Names = std::vector<std::string>;

TEST(Mentions, WhatCountsAsAMention) {
  EXPECT_EQ(mentioned_agents("@beta please look at the queue", "alpha"), Names{"beta"});
  EXPECT_EQ(mentioned_agents("Done. @beta, @gamma-2: yours.", "alpha"), (Names{"beta", "gamma-2"}));
  EXPECT_EQ(mentioned_agents("ask @team.bot.", "alpha"), Names{"team.bot"})
      << "a final '.' ends it";
  EXPECT_EQ(mentioned_agents("(@beta)", "alpha"), Names{"beta"});
  EXPECT_EQ(mentioned_agents("line\n@beta", "alpha"), Names{"beta"});
}

TEST(Mentions, WhatAHostileOrCarelessOutputCannotDo) {
  EXPECT_TRUE(mentioned_agents("mail ops@beta.example.com", "alpha").empty()) << "an address";
  EXPECT_TRUE(mentioned_agents("@alpha talks to itself", "alpha").empty()) << "no self-mention";
  EXPECT_TRUE(mentioned_agents("@Beta @-x @. @ @@beta_ @beta_bot @betaX", "alpha").empty());
  EXPECT_EQ(mentioned_agents("@beta @beta @beta", "alpha"), Names{"beta"}) << "once per agent";
  std::string flood;
  for (int i = 0; i < 1000; ++i) flood += "@a" + std::to_string(i) + " ";
  EXPECT_EQ(mentioned_agents(flood, "alpha"), (Names{"a0", "a1", "a2"})) << "at most 3";
  EXPECT_TRUE(mentioned_agents("@" + std::string(254, 'b'), "alpha").empty()) << "too long";
  EXPECT_EQ(mentioned_agents("@" + std::string(253, 'b'), "alpha").size(), 1u);
  EXPECT_EQ(mentioned_agents("\xff@beta \xc3\xa9@gamma", "alpha"), (Names{"beta", "gamma"}));
}

Json run_with_depth(std::optional<std::string> depth) {
  Json r = run("r1");
  if (depth) r["metadata"]["annotations"] = {{kAnnotationMentionDepth, *depth}};
  return r;
}

TEST(Mentions, AHandMadeDepthStopsTheChainRatherThanRestartingIt) {
  EXPECT_EQ(mention_depth(run_with_depth(std::nullopt)), 0);
  EXPECT_EQ(mention_depth(run_with_depth("1")), 1);
  EXPECT_EQ(mention_depth(run_with_depth("3")), 3);
  for (const char* bad : {"0", "4", "-1", "01", "x", "", "99999999999999999999"}) {
    EXPECT_EQ(mention_depth(run_with_depth(bad)), kMentionDepthMax) << bad;
  }
  Json numeric = run("r1");
  numeric["metadata"]["annotations"] = {{kAnnotationMentionDepth, 1}};
  EXPECT_EQ(mention_depth(numeric), kMentionDepthMax);
}

TEST(Mentions, NamesAreDeterministicPerRunAndTarget) {
  EXPECT_EQ(mention_run_name("beta", "uid-1"), mention_run_name("beta", "uid-1"));
  EXPECT_NE(mention_run_name("beta", "uid-1"), mention_run_name("beta", "uid-2"));
  EXPECT_NE(mention_run_name("beta", "uid-1"), mention_run_name("gamma", "uid-1"));
  EXPECT_THAT(mention_run_name("beta", "uid-1"), ::testing::StartsWith("beta-mention-"));
  EXPECT_LE(mention_run_name(std::string(253, 'b'), "uid-1").size(), 253u);
}

TEST(MentionPolicy, OptInByFlagOrAllowList) {
  std::vector<std::string> errors;
  const MentionPolicy anyone = parse_mention_policy({{"wakeOnMention", true}}, errors);
  EXPECT_TRUE(accepts_mention(anyone, "whoever"));
  const MentionPolicy listed = parse_mention_policy({{"mentionableBy", {"alpha"}}}, errors);
  EXPECT_TRUE(accepts_mention(listed, "alpha"));
  EXPECT_FALSE(accepts_mention(listed, "mallory"));
  EXPECT_FALSE(accepts_mention(parse_mention_policy(Json::object(), errors), "alpha"))
      << "off by default";
  EXPECT_TRUE(errors.empty());
}

TEST(MentionPolicy, BadListsAreNamed) {
  Json a = agent();
  a["spec"]["heartbeat"]["mentionableBy"] = {"alpha", "Not A Name", 7};
  EXPECT_THAT(parse_agent_spec(a).message(),
              HasSubstr("spec.heartbeat.mentionableBy \"Not A Name\": not an Agent name"));
  EXPECT_THAT(parse_agent_spec(a).message(), HasSubstr("spec.heartbeat.mentionableBy \"7\""));
  a["spec"]["heartbeat"]["mentionableBy"] = Json::array();
  for (int i = 0; i < 65; ++i) a["spec"]["heartbeat"]["mentionableBy"].push_back("a");
  EXPECT_THAT(parse_agent_spec(a).message(), HasSubstr("at most 64 Agent names"));
}

// World::finish, then the output the runner reported.
void finish_saying(World& w, const std::string& run, const char* output, TimePoint when) {
  w.finish(run, when, 0.5);
  (*w.find(run))["status"]["output"] = output;
}

TEST(MentionDecision, AFinishedRunWakesTheAgentsThatAcceptUntilItIsCounted) {
  World w{agent("bot")};
  w.accepts_mention = [](const std::string& target) { return target != "mallory"; };
  w.step(at("2024-05-01T12:05:00Z"));
  finish_saying(w, "bot-1714565100", "@beta and @mallory, see the report; cc @bot",
                at("2024-05-01T12:06:00Z"));
  AgentDecision d = w.step(at("2024-05-01T12:06:00Z"));
  ASSERT_EQ(w.mentioned.size(), 1u);
  EXPECT_EQ(w.mentioned[0].target, "beta");
  EXPECT_EQ(w.mentioned[0].depth, 1);
  EXPECT_EQ(w.mentioned[0].name, mention_run_name("beta", "uid-bot-1714565100"));
  EXPECT_EQ(w.mentioned[0].trigger_detail, "mentioned by bot in run bot-1714565100");
  EXPECT_TRUE(has_event(d, "MentionWoke"));
  // Marked counted in that pass: the run wakes nobody again.
  w.step(at("2024-05-01T12:07:00Z"));
  EXPECT_EQ(w.mentioned.size(), 1u);
}

TEST(MentionDecision, AChainStopsAtTheDepthLimit) {
  World w{agent("bot")};
  w.accepts_mention = [](const std::string&) { return true; };
  Json deep = with_status(run("bot-m", "callback"), {{"phase", "Running"}, {"jobName", "bot-m"}});
  deep["metadata"]["annotations"] = {{kAnnotationMentionDepth, "2"}};
  w.runs.push_back(deep);
  finish_saying(w, "bot-m", "@beta your turn", at("2024-05-01T12:06:00Z"));
  w.step(at("2024-05-01T12:06:00Z"));
  ASSERT_EQ(w.mentioned.size(), 1u);
  EXPECT_EQ(w.mentioned[0].depth, 3);

  World last{agent("bot")};
  last.accepts_mention = w.accepts_mention;
  deep["metadata"]["annotations"][kAnnotationMentionDepth] = "3";
  last.runs.push_back(deep);
  finish_saying(last, "bot-m", "@beta your turn", at("2024-05-01T12:06:00Z"));
  AgentDecision d = last.step(at("2024-05-01T12:06:00Z"));
  EXPECT_TRUE(last.mentioned.empty());
  EXPECT_TRUE(has_event(d, "MentionChainStopped"));
}

TEST(MentionDecision, FailedRunsAndAgentsWithoutALookupWakeNobody) {
  World w{agent("bot")};
  w.accepts_mention = [](const std::string&) { return true; };
  w.step(at("2024-05-01T12:05:00Z"));
  w.finish("bot-1714565100", at("2024-05-01T12:06:00Z"), 0.5, std::nullopt, "Failed");
  (*w.find("bot-1714565100"))["status"]["output"] = "@beta help";
  w.step(at("2024-05-01T12:06:00Z"));
  EXPECT_TRUE(w.mentioned.empty());

  World blind{agent("bot")};
  blind.step(at("2024-05-01T12:05:00Z"));
  finish_saying(blind, "bot-1714565100", "@beta help", at("2024-05-01T12:06:00Z"));
  blind.step(at("2024-05-01T12:06:00Z"));
  EXPECT_TRUE(blind.mentioned.empty());
}

}  // namespace
}  // namespace hb::controllers
