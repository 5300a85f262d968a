#include <gtest/gtest.h>

#include "api/agent_types.h"
#include "runner/prompt.h"
#include "runner/tool_specs.h"

namespace hb::api {
namespace {

TEST(Capabilities, MemgptHasAllSevenToolsAndHeartbeats) {
  const auto& caps = capabilities(AgentType::kMemgpt);
  EXPECT_EQ(caps.allowed_tools.size(), 7u);
  EXPECT_TRUE(caps.supports_heartbeats);
  EXPECT_EQ(caps.max_iterations, 5);
  for (auto tool :
       {kToolShell, kToolCoreMemoryAppend, kToolCoreMemoryReplace, kToolArchivalMemoryInsert,
        kToolArchivalMemorySearch, kToolConversationSearch, kToolPauseHeartbeats}) {
    EXPECT_TRUE(caps.allows(tool)) << tool;
  }
}

TEST(Capabilities, LettaV1HasShellAndCoreMemoryOnly) {
  const auto& caps = capabilities(AgentType::kLettaV1);
  EXPECT_EQ(caps.allowed_tools.size(), 3u);
  EXPECT_TRUE(caps.allows(kToolCoreMemoryReplace));
  EXPECT_FALSE(caps.allows(kToolPauseHeartbeats));
  EXPECT_FALSE(caps.allows(kToolArchivalMemoryInsert));
  EXPECT_FALSE(caps.supports_heartbeats);
  EXPECT_EQ(caps.max_iterations, 5);
}

TEST(Capabilities, ReactHasShellAndMoreIterations) {
  const auto& caps = capabilities(AgentType::kReact);
  ASSERT_EQ(caps.allowed_tools.size(), 1u);
  EXPECT_EQ(caps.allowed_tools[0], kToolShell);
  EXPECT_FALSE(caps.supports_heartbeats);
  EXPECT_GT(caps.max_iterations, capabilities(AgentType::kMemgpt).max_iterations);
}

TEST(Capabilities, NamesRoundTrip) {
  for (auto type : {AgentType::kMemgpt, AgentType::kLettaV1, AgentType::kReact}) {
    EXPECT_EQ(parse_agent_type(to_string(type)), type);
    EXPECT_EQ(capabilities(type).type, type);
  }
  EXPECT_FALSE(parse_agent_type("MemGPT").has_value());
  EXPECT_FALSE(parse_agent_type("").has_value());
}

TEST(Capabilities, StatusJson) {
  auto json = to_json(capabilities(AgentType::kLettaV1));
  EXPECT_EQ(json["tools"], nlohmann::json({"shell", "core_memory_append", "core_memory_replace"}));
  EXPECT_EQ(json["heartbeats"], false);
  EXPECT_EQ(json["maxIterations"], 5);
  EXPECT_EQ(json["systemPrompt"], "default");
  EXPECT_EQ(to_json(capabilities(AgentType::kReact))["systemPrompt"], "react");
}

// ADR-011: react_agent has its own ReAct prompt, the others the default;
// the runner renders the type's template with the agent's name.
TEST(Capabilities, EachTypeOpensWithItsSystemPrompt) {
  ContextDocument doc;
  doc.agent_name = "scout";
  doc.agent_type = AgentType::kReact;
  const std::string react = runner::render_system_prompt(doc, {}, {}, {});
  EXPECT_EQ(react.rfind("You are agent \"scout\"", 0), 0u) << react;
  EXPECT_NE(react.find("reason about what to do next, act by calling one tool, observe"),
            std::string::npos);
  EXPECT_EQ(react.find("{agent}"), std::string::npos);
  doc.agent_type = AgentType::kMemgpt;
  const std::string memgpt = runner::render_system_prompt(doc, {}, {}, {});
  EXPECT_NE(memgpt.find("you wake, act with your tools"), std::string::npos);
  EXPECT_EQ(memgpt.find("ReAct"), std::string::npos);
  EXPECT_EQ(runner::render_prompt_template({"t", "{agent} and {agent}"}, "a{agent}"),
            "a{agent} and a{agent}");
}

TEST(OfferedTools, ArchivalToolsNeedStorage) {
  auto without = runner::offered_tools(capabilities(AgentType::kMemgpt), false);
  EXPECT_EQ(without.tools.size(), 4u);
  ASSERT_EQ(without.notes.size(), 1u);
  EXPECT_NE(without.notes[0].find("archival_memory_insert"), std::string::npos);
  EXPECT_NE(without.notes[0].find("conversation_search"), std::string::npos);
  auto with = runner::offered_tools(capabilities(AgentType::kMemgpt), true);
  EXPECT_EQ(with.tools.size(), 7u);
  EXPECT_TRUE(with.notes.empty());
  auto react = runner::offered_tools(capabilities(AgentType::kReact), false);
  EXPECT_EQ(react.tools.size(), 1u);
  EXPECT_TRUE(react.notes.empty());
}

TEST(OfferedTools, EverySpecIsAnObjectSchema) {
  for (auto name : capabilities(AgentType::kMemgpt).allowed_tools) {
    auto spec = runner::tool_spec(name);
    ASSERT_TRUE(spec.has_value()) << name;
    EXPECT_EQ(spec->name, name);
    EXPECT_FALSE(spec->description.empty());
    EXPECT_EQ(spec->parameters["type"], "object");
  }
  auto pause = runner::tool_spec(kToolPauseHeartbeats);
  ASSERT_TRUE(pause.has_value());
  EXPECT_EQ(pause->parameters["properties"]["minutes"]["maximum"], 60);
  EXPECT_EQ(pause->parameters["properties"]["minutes"]["default"], 2);
}

TEST(OfferedTools, AnUnknownToolHasNoSpec) {
  EXPECT_FALSE(runner::tool_spec("rm_rf").has_value());
  EXPECT_FALSE(runner::tool_spec("").has_value());
}

}  // namespace
}  // namespace hb::api
