// The context document: what the operator renders, the runner parses back
// unchanged; what a broken or hostile document holds is refused by name.
#include "api/context_document.h"

#include <gtest/gtest.h>

namespace hb::api {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

ContextDocument full_document() {
  ContextDocument doc;
  doc.agent_name = "scout";
  doc.agent_namespace = "agents";
  doc.agent_type = AgentType::kReact;
  doc.model = {
      Provider::kAnthropic, "claude-3-5-haiku-latest", "https://llm.example/v2", 4096, {15.5, 60}};
  doc.persona = "You are Scout \xE2\x82\xAC.";
  doc.memory_blocks = {{"human", "Ada runs the farm.", 2000}, {"persona", "", 50}};
  doc.memory_config_map = "scout-memory";
  doc.heartbeat_prompt = "Check the queue.";
  doc.budget = {25.0, 480.5, 40000};
  doc.recent_runs = {{"scout-1", "2024-05-01T10:02:10Z", "Succeeded", "completed", "Queue empty."},
                     {"scout-2", "2024-05-01T11:02:10Z", "Failed", "deadline", "Stuck job 7."}};
  doc.run.name = "scout-3";
  doc.run.uid = "uid-3";
  doc.run.invocation_source = "callback";
  doc.run.trigger_detail = "webhook";
  doc.run.metadata = {{"priority", "high"}, {"taskId", "T-42"}};
  doc.run.scheduled_time = *parse_rfc3339("2024-05-01T12:00:00Z");
  doc.run.deadline = *parse_rfc3339("2024-05-01T12:10:00.250Z");
  doc.lease = LeaseConfig{"scout-heartbeat", 120s, 24s};
  doc.archival_path = "/var/lib/heartbeat/archival.db";
  doc.transcript_dir = "/var/lib/heartbeat/transcripts";
  doc.transcript_keep = {"scout-1", "scout-2"};
  return doc;
}

TEST(ContextDocumentContract, RenderThenParseIsTheSameDocument) {
  const ContextDocument doc = full_document();
  EXPECT_EQ(parse_context_document(render_context_document(doc)).value(), doc);
  EXPECT_EQ(parse_context_document_text(render_context_document(doc).dump()).value(), doc);
}

TEST(ContextDocumentContract, AMinimalDocumentRoundTripsWithDefaults) {
  ContextDocument doc;
  doc.agent_name = "a";
  doc.model.model = "m";
  doc.model.base_url = "https://api.openai.com/v1";  // what parsing fills in when absent
  doc.heartbeat_prompt = "p";
  doc.run.name = "r";
  doc.run.deadline = *parse_rfc3339("2024-05-01T12:10:00Z");
  EXPECT_EQ(parse_context_document(render_context_document(doc)).value(), doc);
  doc.model.base_url.clear();  // not rendered; parsing gives the provider's default
  EXPECT_EQ(parse_context_document(render_context_document(doc)).value().model.base_url,
            "https://api.openai.com/v1");
}

std::string parse_error(const json& doc) {
  const ContextDocumentResult parsed = parse_context_document(doc);
  return parsed.ok() ? "" : parsed.error().message;
}

std::string parse_text_error(std::string_view text) {
  const ContextDocumentResult parsed = parse_context_document_text(text);
  return parsed.ok() ? "" : parsed.error().message;
}

TEST(ContextDocumentContract, WrongTypesAreNamed) {
  const json valid = render_context_document(full_document());
  struct Case {
    json::json_pointer at;
    json value;
    std::string field;
  };
  const std::vector<Case> cases = {
      {json::json_pointer("/agent"), "scout", "agent: must be an object, not string"},
      {json::json_pointer("/model/maxTokens"), 1.5, "model.maxTokens: must be an integer"},
      {json::json_pointer("/model/maxTokens"), 200001, "model.maxTokens: must be between"},
      {json::json_pointer("/model/pricing/inputCentsPerMillionTokens"), "15",
       "model.pricing.inputCentsPerMillionTokens: must be a number, not string"},
      {json::json_pointer("/recentRuns"), json::object(), "recentRuns: must be an array"},
      {json::json_pointer("/recentRuns/0/output"), 7, "recentRuns[0].output: must be a string"},
      {json::json_pointer("/run/deadline"), "tomorrow", "run.deadline: must be an RFC 3339 time"},
      {json::json_pointer("/run/metadata/taskId"), 42,
       "run.metadata: metadata.taskId must be a string"},
      {json::json_pointer("/run/metadata/bad key"), "v", "run.metadata: metadata key \"bad key\""},
      {json::json_pointer("/lease/durationSeconds"), 5, "lease.durationSeconds: must be between"},
      {json::json_pointer("/memory/blocks/0/limit"), 0, "memory.blocks[0].limit: must be between"},
      // The runner deletes every transcript not in keep: a hostile or broken
      // list must be refused whole, not read as "keep nothing".
      {json::json_pointer("/transcripts/keep"), "scout-1",
       "transcripts.keep: must be an array of at most 256 run names"},
      {json::json_pointer("/transcripts/keep"), json(std::vector<std::string>(257, "r")),
       "transcripts.keep: must be an array of at most 256 run names"},
      {json::json_pointer("/transcripts/keep/1"), 7,
       "transcripts.keep: must hold run names (strings)"},
      {json::json_pointer("/transcripts/dir"), json::array(), "transcripts.dir: must be a string"},
  };
  for (const Case& c : cases) {
    json doc = valid;
    doc[c.at] = c.value;
    EXPECT_NE(parse_error(doc).find(c.field), std::string::npos)
        << c.at.to_string() << ": " << parse_error(doc);
  }
  EXPECT_NE(parse_error(json::array()).find("must be a JSON object"), std::string::npos);
}

TEST(ContextDocumentContract, HostileTextIsRefusedBeforeParsing) {
  // Oversize: refused by its length alone.
  std::string huge = "{\"persona\":\"" + std::string(kContextDocumentBytesMax, 'x') + "\"}";
  EXPECT_NE(parse_text_error(huge).find("more than the limit"), std::string::npos);
  // Deep nesting: refused before the recursive parser sees it.
  std::string deep = "{\"persona\":" + std::string(100000, '[') + std::string(100000, ']') + "}";
  EXPECT_NE(parse_text_error(deep).find("nested deeper than"), std::string::npos);
  std::string just_deep_enough = std::string(kContextDocumentDepthMax + 1, '[');
  EXPECT_NE(parse_text_error(just_deep_enough).find("nested deeper than"), std::string::npos);
  // Not JSON, a number that overflows, not an object.
  EXPECT_NE(parse_text_error("{not json").find("not valid JSON"), std::string::npos);
  EXPECT_NE(parse_text_error(R"({"kind":44e444444444444444})").find("(document)"),
            std::string::npos);
  EXPECT_NE(parse_text_error("[]").find("must be a JSON object"), std::string::npos);
}

}  // namespace
}  // namespace hb::api
