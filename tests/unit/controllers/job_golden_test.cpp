// The whole Job, context document and per-agent objects of a few varied
// agents, compared byte for byte with golden output
// (testdata/job_golden.json). A change to any of them shows here as a diff;
// when one is meant, regenerate with HB_UPDATE_GOLDEN=1 and review the diff.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "controllers/pod/job_builder.h"
#include "tests/unit/controllers/fixtures.h"

namespace hb::controllers {
namespace {

using namespace testing;

const std::string kGoldenPath =
    std::string(HB_SOURCE_DIR) + "/tests/unit/controllers/testdata/job_golden.json";

struct GoldenCase {
  std::string name;
  Json agent;
  Json run;
  JobConfig config = {};
  std::vector<Json> recent_runs = {};
  std::optional<double> budget_left_cents = std::nullopt;
  bool budget_left_is_daily = false;
  std::optional<Pricing> pricing = std::nullopt;
  std::optional<int64_t> per_run_tokens = std::nullopt;
};

// Past the annotation's limit (kContextAnnotationBytesMax); elided in the
// golden file.
const std::string& large_persona() {
  static const std::string persona(kContextAnnotationBytesMax + 1024, 'p');
  return persona;
}

// `text` with every copy of large_persona() replaced by a short mark.
std::string elide_large_persona(std::string text) {
  const std::string mark = "<large persona>";
  for (std::size_t at = text.find(large_persona()); at != std::string::npos;
       at = text.find(large_persona(), at + mark.size())) {
    text.replace(at, large_persona().size(), mark);
  }
  return text;
}

Json finished_run(const std::string& name, const char* finished_at, const std::string& output) {
  return with_status(run(name), {{"phase", "Succeeded"},
                                 {"finishedAt", finished_at},
                                 {"stopReason", "done"},
                                 {"output", output}});
}

// Builtin mode with nearly every field: key, archival claim, tools image and
// resources, env (one reserved), resources, memory blocks, budgets, runtime
// class, pod settings, OTLP settings, earlier runs.
GoldenCase builtin_full() {
  GoldenCase c{"builtin_full", agent("full"), run("full-1714565100")};
  Json& spec = c.agent["spec"];
  spec["persona"] = "You are Full.";
  spec["model"]["baseURL"] = "http://llm.example:8080/v1";
  spec["model"]["maxTokens"] = 2048;
  spec["model"]["pricing"] = {{"inputCentsPerMillionTokens", 15},
                              {"outputCentsPerMillionTokens", 60}};
  spec["memory"] = {{"blocks", Json::array({{{"label", "human"}, {"value", "Ada"}, {"limit", 100}},
                                            {{"label", "persona"}, {"value", "Curious."}}})},
                    {"archival", {{"persistentVolumeClaimName", "full-archive"}}}};
  spec["heartbeat"]["contextRuns"] = 2;
  spec["budget"] = {{"monthlyCents", 500}, {"perRunCents", 5}, {"perRunTokens", 40000}};
  spec["runtime"]["env"] = Json::array({{{"name", "FOO"}, {"value", "bar"}},
                                        {{"name", "HEARTBEAT_API_KEY"}, {"value", "sneaky"}},
                                        {{"name", "OTEL_EXPORTER_OTLP_ENDPOINT"}, {"value", "x"}}});
  spec["runtime"]["resources"] = {{"limits", {{"memory", "256Mi"}, {"cpu", "500m"}}}};
  spec["runtime"]["tools"] = {{"image", "tools:1"}, {"resources", {{"limits", {{"cpu", "1"}}}}}};
  spec["runtime"]["runtimeClassName"] = "gvisor";
  spec["runtime"]["nodeSelector"] = {{"pool", "agents"}};
  c.agent["status"] = {{"spend", {{"period", "2024-05"}, {"cents", 120.5}}}};
  c.run["spec"]["triggerDetail"] = "every 5m";
  c.config.otel_endpoint = "http://otel:4318";
  c.config.otel_headers_secret = "otel-headers";
  c.config.semconv_opt_in = "gen_ai_latest_experimental";
  c.recent_runs = {finished_run("full-1", "2024-05-01T11:00:00Z", "first"),
                   finished_run("full-2", "2024-05-01T11:05:00Z", "second"),
                   finished_run("full-3", "2024-05-01T11:10:00Z", "third")};
  c.budget_left_cents = 300;
  return c;
}

// Command mode: the user's image and command, no key, no tools container,
// the operator's runner resources, the context in a ConfigMap.
GoldenCase command_mode() {
  GoldenCase c{"command_mode", agent("cmd"), run("cmd-1", "callback")};
  Json& spec = c.agent["spec"];
  spec["type"] = "react_agent";
  spec["model"].erase("apiKeySecretRef");
  spec["runtime"] = {{"mode", "command"},
                     {"image", "me/agent:2"},
                     {"command", Json::array({"/bin/agent", "--once"})},
                     {"timeoutSeconds", 120},
                     {"graceSeconds", 5},
                     {"env", Json::array({{{"name", "MODE"}, {"value", "cmd"}}})}};
  c.run["spec"]["triggerDetail"] = "webhook";
  c.run["spec"]["metadata"] = {{"issue", "42"}};
  c.run["spec"]["scheduledTime"] = "2024-05-01T12:05:00Z";
  c.config.context_transport = ContextTransport::kConfigMap;
  c.config.runner_resources = {{"limits", {{"memory", "128Mi"}}}};
  c.config.tools_image = "fleet-tools:1";
  return c;
}

// No runtime section at all: every default; the operator's tools image and
// resources and pod defaults; a daily budget hold; price and cap overrides.
GoldenCase builtin_defaults() {
  GoldenCase c{"builtin_defaults", agent("plain"), run("plain-1", "manual")};
  Json& spec = c.agent["spec"];
  spec["type"] = "letta_v1_agent";
  spec.erase("runtime");
  spec["model"]["provider"] = "anthropic";
  c.run["spec"].erase("invocationSource");
  c.config.tools_image = "fleet-tools:1";
  c.config.tools_resources = {{"requests", {{"cpu", "100m"}}}};
  c.config.pod_defaults = {{"priorityClassName", "agents"}};
  c.config.default_image = "runner:9";
  c.config.runner_command = {"/runner", "--verbose"};
  c.budget_left_cents = 12.5;
  c.budget_left_is_daily = true;
  c.pricing = Pricing{100, 200, 10, 125};
  c.per_run_tokens = 9000;
  return c;
}

// Builtin mode with an empty command (the operator's runner), the runner
// image as the tools image, an archival claim, and a context too large for
// an annotation (a ConfigMap instead).
GoldenCase builtin_large_context() {
  GoldenCase c{"builtin_large_context", agent("big"), run("big-1")};
  Json& spec = c.agent["spec"];
  spec["persona"] = large_persona();
  spec["runtime"]["image"] = "custom-runner:3";
  spec["runtime"]["command"] = Json::array();
  spec["memory"] = {{"archival", {{"persistentVolumeClaimName", "big-archive"}}}};
  spec["budget"] = {{"monthlyCents", 100}};
  c.agent["status"] = {{"spend", {{"period", "2024-04"}, {"cents", 80}}}};
  c.recent_runs = {finished_run("big-0", "2024-05-01T10:00:00Z", "old")};
  return c;
}

// As the reconciler does: the stored objects typed once, then rendered.
Json render_case(const GoldenCase& c) {
  std::vector<const Json*> recent;
  for (const Json& r : c.recent_runs) recent.push_back(&r);
  const AgentSpec spec = parse_agent_spec(c.agent).spec;
  const StartingRun started = starting_run(c.run);
  const ContextInput in{&spec,
                        &started,
                        "Heartbeat.",
                        earlier_runs(recent),
                        at("2024-05-01T12:05:00Z"),
                        c.budget_left_cents,
                        c.budget_left_is_daily,
                        agent_spend(c.agent)};
  const Json context = render_context(in, c.config, c.pricing, c.per_run_tokens);
  const JobPlan plan = build_job(started, spec, context.dump(), c.config);
  Json objects = Json::array();
  for (const auto& [kind, object] : build_agent_objects(spec, c.config)) {
    objects.push_back({{"kind", kind}, {"object", object}});
  }
  return {{"context", context},
          {"job", plan.job},
          {"contextConfigMap", plan.context_config_map.value_or(Json())},
          {"agentObjects", objects}};
}

TEST(JobGolden, RendersAsBefore) {
  Json rendered = Json::object();
  for (const GoldenCase& c :
       {builtin_full(), command_mode(), builtin_defaults(), builtin_large_context()}) {
    rendered[c.name] = render_case(c);
  }
  const std::string text = elide_large_persona(rendered.dump(2) + "\n");
  if (std::getenv("HB_UPDATE_GOLDEN") != nullptr) {
    std::ofstream(kGoldenPath) << text;
    GTEST_SKIP() << "wrote " << kGoldenPath;
  }
  std::ifstream golden_file(kGoldenPath);
  ASSERT_TRUE(golden_file) << kGoldenPath;
  std::stringstream golden;
  golden << golden_file.rdbuf();
  // Case by case first, so a failure names the case.
  const Json expected = Json::parse(golden.str());
  const Json actual = Json::parse(text);
  for (const auto& [name, value] : expected.items()) {
    EXPECT_EQ(actual[name].dump(2), value.dump(2)) << name;
  }
  EXPECT_EQ(text, golden.str());
}

}  // namespace
}  // namespace hb::controllers
