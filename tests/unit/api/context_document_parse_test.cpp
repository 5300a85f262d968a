// The runner's side of the context document: every field, its default, and
// errors that name the field.
#include <gtest/gtest.h>

#include "api/context_document.h"
#include "api/rfc3339.h"

namespace hb::api {
namespace {

using nlohmann::json;

json valid_document() {
  return json::parse(R"({
    "kind": "HeartbeatContext",
    "agent": {"name": "scout", "namespace": "agents", "type": "letta_v1_agent"},
    "model": {"provider": "anthropic", "model": "claude-x", "maxTokens": 512,
              "pricing": {"inputCentsPerMillionTokens": 300, "outputCentsPerMillionTokens": 1500}},
    "persona": "You are Scout.",
    "memory": {"configMapName": "scout-memory",
               "blocks": [{"label": "human", "value": "Ada", "limit": 100}, {"label": "notes"}]},
    "heartbeat": {"prompt": "Check the queue."},
    "budget": {"perRunCents": 25, "monthRemainingCents": 10.5},
    "recentRuns": [{"name": "scout-1", "finishedAt": "2024-05-01T11:00:00Z",
                    "stopReason": "completed", "output": "all quiet"}],
    "run": {"name": "scout-2", "invocationSource": "manual", "triggerDetail": "kubectl",
            "scheduledTime": "2024-05-01T12:00:00Z", "deadline": "2024-05-01T12:10:00Z"},
    "lease": {"name": "scout-heartbeat", "durationSeconds": 300, "renewIntervalSeconds": 60},
    "archival": {"path": "/var/lib/heartbeat/archival.db"}
  })");
}

std::string error_for(const json& doc) {
  const ContextDocumentResult parsed = parse_context_document(doc);
  return parsed.ok() ? "" : parsed.error().message;
}

TEST(ContextDocument, ParsesEveryField) {
  auto doc = parse_context_document(valid_document()).value();
  EXPECT_EQ(doc.agent_name, "scout");
  EXPECT_EQ(doc.agent_namespace, "agents");
  EXPECT_EQ(doc.agent_type, AgentType::kLettaV1);
  EXPECT_EQ(doc.model.provider, Provider::kAnthropic);
  EXPECT_EQ(doc.model.base_url, "https://api.anthropic.com");
  EXPECT_EQ(doc.model.max_tokens, 512);
  EXPECT_DOUBLE_EQ(doc.model.pricing.output_cents_per_million_tokens, 1500);
  EXPECT_FALSE(doc.model.pricing.cached_input_cents_per_million_tokens)
      << "a document without cache prices: the input price";
  EXPECT_EQ(doc.memory_config_map, "scout-memory");
  ASSERT_EQ(doc.memory_blocks.size(), 2u);
  EXPECT_EQ(doc.memory_blocks[1].limit, kCoreMemoryBlockLimitDefault);
  EXPECT_EQ(doc.heartbeat_prompt, "Check the queue.");
  EXPECT_DOUBLE_EQ(*doc.budget.run_limit_cents(), 10.5);
  ASSERT_EQ(doc.recent_runs.size(), 1u);
  EXPECT_EQ(doc.recent_runs[0].output, "all quiet");
  EXPECT_EQ(doc.run.invocation_source, "manual");
  EXPECT_EQ(doc.run.deadline, *parse_rfc3339("2024-05-01T12:10:00Z"));
  ASSERT_TRUE(doc.lease.has_value());
  EXPECT_EQ(doc.lease->renew_interval, std::chrono::seconds(60));
  EXPECT_EQ(doc.archival_path, "/var/lib/heartbeat/archival.db");
}

TEST(ContextDocument, DefaultsForOptionalFields) {
  auto doc = parse_context_document(json::parse(R"({
    "agent": {"name": "a"}, "model": {"provider": "openai", "model": "llama3",
    "baseURL": "http://ollama:11434/v1/"}, "heartbeat": {"prompt": "p"},
    "run": {"name": "r", "deadline": "2024-05-01T12:10:00+02:00"}})"))
                 .value();
  EXPECT_EQ(doc.agent_type, AgentType::kMemgpt);
  EXPECT_EQ(doc.model.base_url, "http://ollama:11434/v1");
  EXPECT_EQ(doc.model.max_tokens, 1024);
  EXPECT_FALSE(doc.budget.run_limit_cents().has_value());
  EXPECT_FALSE(doc.lease.has_value());
  EXPECT_TRUE(doc.archival_path.empty());
  EXPECT_EQ(doc.run.invocation_source, "scheduler");
  EXPECT_EQ(doc.run.deadline, *parse_rfc3339("2024-05-01T10:10:00Z"));
}

TEST(ContextDocument, PerRunTokensRoundTripsAndZeroIsNoCap) {
  auto doc = valid_document();
  doc["budget"]["perRunTokens"] = 50000;
  ContextDocument parsed = parse_context_document(doc).value();
  EXPECT_EQ(parsed.budget.per_run_tokens, 50000);
  EXPECT_EQ(render_context_document(parsed)["budget"]["perRunTokens"], 50000);
  EXPECT_EQ(parse_context_document(render_context_document(parsed)).value(), parsed);
  doc["budget"]["perRunTokens"] = 0;
  EXPECT_FALSE(parse_context_document(doc).value().budget.per_run_tokens.has_value());
  EXPECT_FALSE(parse_context_document(valid_document()).value().budget.per_run_tokens.has_value());
  doc["budget"]["perRunTokens"] = -1;
  EXPECT_NE(error_for(doc).find("budget.perRunTokens: must be between 0"), std::string::npos);
}

TEST(ContextDocument, ErrorsNameTheField) {
  auto doc = valid_document();
  doc["agent"]["type"] = "gpt_agent";
  EXPECT_NE(error_for(doc).find("agent.type: must be one of memgpt_agent"), std::string::npos);

  doc = valid_document();
  doc["model"]["pricing"]["inputCentsPerMillionTokens"] = "3";
  EXPECT_NE(error_for(doc).find("model.pricing.inputCentsPerMillionTokens: must be a number"),
            std::string::npos);

  doc = valid_document();
  doc["model"]["maxTokens"] = 0;
  EXPECT_NE(error_for(doc).find("model.maxTokens: must be between 1"), std::string::npos);

  doc = valid_document();
  doc["run"].erase("deadline");
  EXPECT_NE(error_for(doc).find("run.deadline: is required"), std::string::npos);

  doc = valid_document();
  doc["run"]["deadline"] = "tomorrow";
  EXPECT_NE(error_for(doc).find("run.deadline: must be an RFC 3339 time"), std::string::npos);

  doc = valid_document();
  doc["memory"]["blocks"][1]["label"] = "human";
  EXPECT_NE(error_for(doc).find("memory.blocks[1].label: duplicate"), std::string::npos);

  doc = valid_document();
  doc["model"]["provider"] = "gemini";
  EXPECT_NE(error_for(doc).find("model.provider"), std::string::npos);

  doc = valid_document();
  doc["lease"]["renewIntervalSeconds"] = 300;
  EXPECT_NE(error_for(doc).find("lease.renewIntervalSeconds"), std::string::npos);

  doc = valid_document();
  doc.erase("heartbeat");
  EXPECT_NE(error_for(doc).find("heartbeat: is required"), std::string::npos);

  doc = valid_document();
  doc["model"]["baseURL"] = "ftp://x";
  EXPECT_NE(error_for(doc).find("model.baseURL"), std::string::npos);
}

std::string text_error_for(std::string_view text) {
  const ContextDocumentResult parsed = parse_context_document_text(text);
  return parsed.ok() ? "" : parsed.error().message;
}

// What json::parse throws for the text: the message the document's error carries.
std::string thrown_by_json_parse(std::string_view text) {
  try {
    const json parsed = json::parse(text);
    return "parsed: " + parsed.dump();
  } catch (const json::exception& error) {
    return error.what();
  }
}

TEST(ContextDocument, MalformedTextIsAnError) {
  for (std::string_view text : {"{not json", R"({"agent": )"}) {
    EXPECT_EQ(text_error_for(text),
              "context document: (document): is not valid JSON: " + thrown_by_json_parse(text));
  }
  EXPECT_EQ(text_error_for("[]"), "context document: (document): must be a JSON object, not array");
  // Found by context_document_fuzz: a number too large for a double threw
  // json's out_of_range past the parser.
  EXPECT_EQ(text_error_for(R"({"kind":44e444444444444444})"),
            "context document: (document): is not valid JSON: [json.exception.out_of_range.406] "
            "number overflow parsing '44e444444444444444'");
}

TEST(ContextDocument, TheErrorNamesItsField) {
  json doc = valid_document();
  doc["run"]["deadline"] = 7;
  const ContextDocumentResult parsed = parse_context_document(doc);
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.error().field, "run.deadline");
  EXPECT_EQ(parsed.error().message, "context document: run.deadline: must be a string, not number");
}

// The first problem in the document's order is the one reported.
TEST(ContextDocument, TheFirstProblemIsReported) {
  json doc = valid_document();
  doc["agent"]["name"] = 5;
  doc["model"]["provider"] = "gemini";
  doc.erase("heartbeat");
  EXPECT_EQ(error_for(doc), "context document: agent.name: must be a string, not number");
  doc = valid_document();
  doc["memory"]["blocks"] = {{{"label", "a"}}, 3, {{"label", 4}}};
  EXPECT_EQ(error_for(doc), "context document: memory.blocks[1]: must be an object, not number");
}

TEST(Rfc3339, RoundTripsAndRejects) {
  auto time = parse_rfc3339("2024-02-29T23:59:59.250Z");
  ASSERT_TRUE(time.has_value());
  EXPECT_EQ(format_rfc3339_millis(*time), "2024-02-29T23:59:59.250Z");
  EXPECT_EQ(format_rfc3339_millis(*parse_rfc3339("2024-05-01T12:00:00Z")), "2024-05-01T12:00:00Z");
  EXPECT_FALSE(parse_rfc3339("2023-02-29T00:00:00Z").has_value());
  EXPECT_FALSE(parse_rfc3339("2024-05-01 12:00").has_value());
  EXPECT_FALSE(parse_rfc3339("2024-05-01T12:00:00").has_value());
  // Found by context_document_fuzz: years the nanosecond clock cannot hold
  // overflowed (UB); every year outside 1970..2200 is malformed now.
  EXPECT_FALSE(parse_rfc3339("1618-05-01T12:00:00Z").has_value());
  EXPECT_FALSE(parse_rfc3339("9999-05-01T12:00:00Z").has_value());
  EXPECT_FALSE(parse_rfc3339("2201-01-01T00:00:00Z").has_value());
  EXPECT_TRUE(parse_rfc3339("2200-12-31T23:59:59Z").has_value());
}

TEST(ContextDocument, CachePricesParseAndANegativeOneIsNamed) {
  json doc = valid_document();
  doc["model"]["pricing"]["cachedInputCentsPerMillionTokens"] = 30;
  doc["model"]["pricing"]["cacheWriteInputCentsPerMillionTokens"] = 375;
  const ContextDocument parsed = parse_context_document(doc).value();
  EXPECT_EQ(parsed.model.pricing.cached_input_cents_per_million_tokens, 30);
  EXPECT_EQ(parsed.model.pricing.cache_write_input_cents_per_million_tokens, 375);
  doc["model"]["pricing"]["cacheWriteInputCentsPerMillionTokens"] = -1;
  EXPECT_NE(error_for(doc).find("model.pricing.cacheWriteInputCentsPerMillionTokens"),
            std::string::npos);
}

}  // namespace
}  // namespace hb::api
