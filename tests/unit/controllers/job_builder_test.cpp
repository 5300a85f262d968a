// The Job, context document and per-agent objects.
#include "controllers/pod/job_builder.h"

#include <gtest/gtest.h>

#include <set>

#include "api/trace_context.h"
#include "controllers/model/agent_grants.h"
#include "controllers/model/names.h"
#include "controllers/run/cache_projection.h"
#include "tests/unit/controllers/fixtures.h"

namespace hb::controllers {
namespace {

using namespace testing;

Json full_agent() {
  Json a = agent();
  a["spec"]["persona"] = "You are Bot.";
  a["spec"]["memory"] = {
      {"blocks", Json::array({{{"label", "human"}, {"value", "Ada"}, {"limit", 100}}})}};
  a["spec"]["budget"] = {{"monthlyCents", 500}, {"perRunCents", 5}};
  a["spec"]["runtime"]["env"] = Json::array(
      {{{"name", "FOO"}, {"value", "bar"}}, {{"name", "HEARTBEAT_API_KEY"}, {"value", "sneaky"}}});
  a["spec"]["runtime"]["resources"] = {{"limits", {{"memory", "256Mi"}}}};
  a["status"] = {{"spend", {{"period", "2024-05"}, {"cents", 120.5}}}};
  return a;
}

const Json& container_of(const Json& job) {
  return job["spec"]["template"]["spec"]["containers"][0];
}

TEST(JobBuilder, SecurityAndLifecycleSettings) {
  Json a = full_agent();
  Json r = run("bot-1714565100");
  JobPlan plan = build_stored_job(r, a, "{}", JobConfig{});
  const Json& job = plan.job;
  EXPECT_EQ(job["metadata"]["name"], "bot-1714565100");
  EXPECT_EQ(job["metadata"]["ownerReferences"][0]["kind"], "HeartbeatRun");
  EXPECT_EQ(job["metadata"]["ownerReferences"][0]["uid"], "uid-bot-1714565100");
  EXPECT_EQ(job["metadata"]["ownerReferences"][0]["controller"], true);
  EXPECT_EQ(job["spec"]["backoffLimit"], 0);
  EXPECT_EQ(job["spec"]["activeDeadlineSeconds"], 300);
  const Json& pod = job["spec"]["template"]["spec"];
  EXPECT_EQ(pod["restartPolicy"], "Never");
  EXPECT_EQ(pod["terminationGracePeriodSeconds"], 30);
  EXPECT_EQ(pod["serviceAccountName"], "bot-runner");
  EXPECT_EQ(pod["securityContext"]["runAsNonRoot"], true);
  EXPECT_EQ(pod["securityContext"]["seccompProfile"]["type"], "RuntimeDefault");
  const Json& c = container_of(job);
  EXPECT_EQ(c["securityContext"]["allowPrivilegeEscalation"], false);
  EXPECT_EQ(c["securityContext"]["readOnlyRootFilesystem"], true);
  EXPECT_EQ(c["securityContext"]["capabilities"]["drop"], Json::array({"ALL"}));
  EXPECT_EQ(c["terminationMessagePolicy"], "File") << "never the log tail";
  EXPECT_EQ(c["resources"]["limits"]["memory"], "256Mi");
  // /tmp is the only writable place, the context is read-only.
  bool tmp = false, context_ro = false;
  for (const Json& m : c["volumeMounts"]) {
    if (m["mountPath"] == "/tmp") tmp = true;
    if (m["mountPath"] == "/etc/heartbeat") context_ro = m["readOnly"] == true;
  }
  EXPECT_TRUE(tmp);
  EXPECT_TRUE(context_ro);
  EXPECT_EQ(job["spec"]["template"]["metadata"]["labels"]["heartbeat.dev/run"], "bot-1714565100");
}

TEST(JobBuilder, ApiKeyOnlyThroughSecretKeyRefAndIdentityInEnv) {
  Json a = full_agent();
  Json r = run("bot-1");
  const JobPlan plan = build_stored_job(r, a, "{}", JobConfig{});
  const Json& env = container_of(plan.job)["env"];
  int api_keys = 0;
  bool foo = false, run_name = false;
  for (const Json& e : env) {
    if (e["name"] == "HEARTBEAT_API_KEY") {
      ++api_keys;
      EXPECT_FALSE(e.contains("value"));
      EXPECT_EQ(e["valueFrom"]["secretKeyRef"]["name"], "llm");
      EXPECT_EQ(e["valueFrom"]["secretKeyRef"]["key"], "api-key");
    }
    if (e["name"] == "FOO") foo = true;
    if (e["name"] == "HEARTBEAT_RUN_NAME") run_name = e["value"] == "bot-1";
  }
  EXPECT_EQ(api_keys, 1);  // the user's HEARTBEAT_* override is dropped
  EXPECT_TRUE(foo);
  EXPECT_TRUE(run_name);
}

TEST(JobBuilder, ContextAsConfigMapOwnedByTheRun) {
  Json a = full_agent();
  Json r = run("bot-1");
  JobConfig config;
  config.context_transport = ContextTransport::kConfigMap;
  JobPlan plan = build_stored_job(r, a, "{\"kind\":\"HeartbeatContext\"}", config);
  ASSERT_TRUE(plan.context_config_map);
  EXPECT_EQ((*plan.context_config_map)["metadata"]["name"], "bot-1-context");
  EXPECT_EQ((*plan.context_config_map)["metadata"]["ownerReferences"][0]["kind"], "HeartbeatRun");
  EXPECT_EQ((*plan.context_config_map)["data"]["context.json"], "{\"kind\":\"HeartbeatContext\"}");
  EXPECT_EQ(plan.job["spec"]["template"]["spec"]["volumes"][0]["configMap"]["name"],
            "bot-1-context");
}

TEST(JobBuilder, ContextAsAnnotationWhenItFitsElseConfigMap) {
  Json a = full_agent();
  Json r = run("bot-1");
  JobConfig config;  // the default transport: no ConfigMap write when it fits
  EXPECT_EQ(config.context_transport, ContextTransport::kAnnotation);
  JobPlan plan = build_stored_job(r, a, "{}", config);
  EXPECT_FALSE(plan.context_config_map);
  EXPECT_EQ(plan.job["spec"]["template"]["metadata"]["annotations"]["heartbeat.dev/context"], "{}");
  EXPECT_EQ(plan.job["spec"]["template"]["spec"]["volumes"][0]["downwardAPI"]["items"][0]
                    ["fieldRef"]["fieldPath"],
            "metadata.annotations['heartbeat.dev/context']");
  const std::string big(kContextAnnotationBytesMax + 1, 'x');
  EXPECT_TRUE(build_stored_job(r, a, big, config).context_config_map);
  EXPECT_DEATH(build_stored_job(r, a, std::string(api::kContextDocumentBytesMax + 1, 'x'), config),
               "callers refuse a context document too large first");
}

TEST(JobBuilder, CommandModeRunsTheUsersImageAndCommand) {
  Json a = full_agent();
  a["spec"]["runtime"]["mode"] = "command";
  a["spec"]["runtime"]["image"] = "example.com/my-agent:1";
  a["spec"]["runtime"]["command"] = Json::array({"python", "agent.py"});
  Json r = run("bot-1");
  const JobPlan plan = build_stored_job(r, a, "{}", JobConfig{});
  const Json& c = container_of(plan.job);
  EXPECT_EQ(c["image"], "example.com/my-agent:1");
  EXPECT_EQ(c["command"], Json::array({"python", "agent.py"}));
  EXPECT_EQ(c["terminationMessagePolicy"], "File") << "never the log tail";
}

TEST(JobBuilder, DefaultImageAndRunnerCommand) {
  Json a = agent();
  Json r = run("bot-1");
  JobConfig config;
  config.default_image = "runner:dev";
  const JobPlan plan = build_stored_job(r, a, "{}", config);
  const Json& c = container_of(plan.job);
  EXPECT_EQ(c["image"], "runner:dev");
  EXPECT_EQ(c["command"][0], "/usr/local/bin/heartbeat-runner");
}

TEST(JobBuilder, LongRunNamesGiveValidJobNames) {
  Json a = agent();
  Json r = run(std::string(100, 'x') + ".manual");
  const std::string name = build_stored_job(r, a, "{}", JobConfig{}).job["metadata"]["name"];
  EXPECT_LE(name.size(), 63u);
  EXPECT_EQ(name.find('.'), std::string::npos);
}

TEST(JobBuilder, PerAgentRoleReachesOnlyItsLeaseAndMemoryByName) {
  auto objects = build_agent_objects(parse_agent_spec(full_agent()).spec, JobConfig{});
  ASSERT_EQ(objects.size(), 5u);
  const Json* role = nullptr;
  for (auto& [kind, object] : objects) {
    EXPECT_EQ(object["metadata"]["ownerReferences"][0]["kind"], "Agent") << kind;
    if (kind == "roles") role = &object;
    if (kind == "configmaps") {
      EXPECT_EQ(object["metadata"]["name"], "bot-memory");
      Json blocks = Json::parse(object["data"]["blocks.json"].get<std::string>());
      EXPECT_EQ(blocks[0]["label"], "human");
    }
    if (kind == "rolebindings") {
      EXPECT_EQ(object["subjects"][0]["name"], "bot-runner");
      EXPECT_EQ(object["roleRef"]["name"], "bot-runner");
    }
  }
  ASSERT_NE(role, nullptr);
  ASSERT_EQ((*role)["rules"].size(), 2u);
  for (const Json& rule : (*role)["rules"]) {
    ASSERT_EQ(rule["resourceNames"].size(), 1u);
    for (const Json& verb : rule["verbs"]) {
      EXPECT_NE(verb, "create");
      EXPECT_NE(verb, "list");
      EXPECT_NE(verb, "delete");
    }
  }
  EXPECT_EQ((*role)["rules"][0]["resourceNames"][0], "bot-heartbeat");
  EXPECT_EQ((*role)["rules"][1]["resourceNames"][0], "bot-memory");
}

// Ownership before grants: what the Role names (memory ConfigMap, Lease)
// is made first, what grants rights after; none carries the mark, which the
// operator patches onto the Lease once all five exist.
TEST(JobBuilder, PerAgentObjectsNamedByTheRoleComeBeforeTheGrants) {
  const auto objects = build_agent_objects(parse_agent_spec(full_agent()).spec, JobConfig{});
  std::vector<std::string> kinds;
  for (const auto& [kind, object] : objects) kinds.push_back(kind);
  EXPECT_EQ(kinds, (std::vector<std::string>{"configmaps", "leases", "serviceaccounts", "roles",
                                             "rolebindings"}));
  for (std::size_t i = 0; i < objects.size(); ++i) {
    EXPECT_EQ(grants_rights(kinds[i]), i >= 2) << kinds[i];
    EXPECT_FALSE(objects[i].second["metadata"].contains("annotations")) << kinds[i];
    EXPECT_EQ(objects[i].second["metadata"]["ownerReferences"][0]["controller"], true) << kinds[i];
  }
  Json lease = objects[1].second;
  const std::string uid = full_agent()["metadata"]["uid"];
  EXPECT_FALSE(agent_objects_made(&lease, uid));
  lease["metadata"].update(agent_objects_made_patch()["metadata"]);
  EXPECT_TRUE(agent_objects_made(&lease, uid));
}

// The runner patches its Lease and reads and replaces its memory
// (runner/kube_adapters.cpp); the Role grants exactly that.
TEST(JobBuilder, PerAgentRoleGrantsOnlyTheVerbsTheRunnerUses) {
  const auto objects = build_agent_objects(parse_agent_spec(full_agent()).spec, JobConfig{});
  const Json& role = objects[3].second;
  ASSERT_EQ(role["kind"], "Role");
  EXPECT_EQ(role["rules"][0]["resources"], Json::array({"leases"}));
  EXPECT_EQ(role["rules"][0]["verbs"], Json::array({"patch"}));
  EXPECT_EQ(role["rules"][1]["resources"], Json::array({"configmaps"}));
  EXPECT_EQ(role["rules"][1]["verbs"], Json::array({"get", "update"}));
}

TEST(JobBuilder, OnlyAMarkedLeaseOfTheSameAgentProvesItsObjects) {
  const Json agent_json = full_agent();
  const std::string uid = agent_json["metadata"]["uid"];
  Json marked = build_agent_objects(parse_agent_spec(agent_json).spec, JobConfig{})[1].second;
  marked["metadata"].update(agent_objects_made_patch()["metadata"]);
  Json unmarked = marked;
  unmarked["metadata"].erase("annotations");
  Json other_value = marked;
  other_value["metadata"]["annotations"][kAnnotationAgentObjectsMade] = "yes";
  Json not_a_string = marked;
  not_a_string["metadata"]["annotations"][kAnnotationAgentObjectsMade] = true;
  Json annotations_not_an_object = marked;
  annotations_not_an_object["metadata"]["annotations"] = "x";
  Json disowned = marked;  // what a runner that rewrote its Lease could leave
  disowned["metadata"]["ownerReferences"] = Json::array();
  Json not_controller = marked;  // an ownerReference anyone could add to their own Lease
  not_controller["metadata"]["ownerReferences"][0]["controller"] = false;
  const struct {
    const char* what;
    const Json* lease;
    std::string uid;
    bool made;
  } cases[] = {
      {"marked and owned", &marked, uid, true},
      {"no Lease cached", nullptr, uid, false},
      {"no mark (an older operator's Lease)", &unmarked, uid, false},
      {"another mark value", &other_value, uid, false},
      {"a mark that is not a string", &not_a_string, uid, false},
      {"annotations not an object", &annotations_not_an_object, uid, false},
      {"no owner", &disowned, uid, false},
      {"owned but not as controller", &not_controller, uid, false},
      {"a re-created Agent (another uid)", &marked, "another-uid", false},
      {"no uid", &marked, "", false},
  };
  for (const auto& c : cases) EXPECT_EQ(agent_objects_made(c.lease, c.uid), c.made) << c.what;
}

// The runner is told what the shell holds for the run (budget_hold_ahead.h).
TEST(ContextDocument, TellsTheRunnerTheSmallestBudgetLeft) {
  Json a = full_agent();  // monthlyCents 400, its status says 20.5 spent
  Json r = run("bot-1", "manual");
  ContextInput in{nullptr, nullptr, "Heartbeat.", {}, at("2024-05-01T12:10:00Z")};
  EXPECT_EQ(render_stored(a, r, in, JobConfig{})["budget"]["monthRemainingCents"], 379.5);
  in.budget_left_cents = 3.0;
  EXPECT_EQ(render_stored(a, r, in, JobConfig{})["budget"]["monthRemainingCents"], 3.0);
  in.budget_left_cents = 1000.0;  // the Agent's own is smaller
  EXPECT_EQ(render_stored(a, r, in, JobConfig{})["budget"]["monthRemainingCents"], 379.5);
}

TEST(ContextDocument, CarriesWhatTheRunnerReads) {
  Json a = full_agent();
  Json r = run("bot-1", "callback");
  r["spec"]["triggerDetail"] = "webhook";
  std::vector<Json> history;
  for (int i = 0; i < 5; ++i) {
    history.push_back(with_status(run("old-" + std::to_string(i)),
                                  {{"phase", "Succeeded"},
                                   {"finishedAt", "2024-05-01T12:0" + std::to_string(i) + ":00Z"},
                                   {"stopReason", "completed"},
                                   {"output", "out " + std::to_string(i)}}));
  }
  std::vector<const Json*> ptrs;
  for (const Json& h : history) ptrs.push_back(&h);
  ContextInput in{nullptr, nullptr, "Heartbeat.", earlier_runs(ptrs), at("2024-05-01T12:10:00Z")};
  Json doc = render_stored(a, r, in, JobConfig{});
  EXPECT_EQ(doc["kind"], "HeartbeatContext");
  EXPECT_EQ(doc["agent"]["name"], "bot");
  EXPECT_EQ(doc["agent"]["namespace"], "ns");
  EXPECT_EQ(doc["model"]["provider"], "openai");
  EXPECT_EQ(doc["persona"], "You are Bot.");
  EXPECT_EQ(doc["memory"]["configMapName"], "bot-memory");
  EXPECT_EQ(doc["memory"]["blocks"][0]["value"], "Ada");
  EXPECT_EQ(doc["heartbeat"]["prompt"], "Heartbeat.");
  EXPECT_EQ(doc["budget"]["perRunCents"], 5);
  EXPECT_EQ(doc["budget"]["monthRemainingCents"], 379.5);
  // contextRuns default 3: the newest three, oldest first.
  ASSERT_EQ(doc["recentRuns"].size(), 3u);
  EXPECT_EQ(doc["recentRuns"][0]["name"], "old-2");
  EXPECT_EQ(doc["recentRuns"][2]["name"], "old-4");
  EXPECT_EQ(doc["run"]["name"], "bot-1");
  EXPECT_EQ(doc["run"]["invocationSource"], "callback");
  EXPECT_EQ(doc["run"]["triggerDetail"], "webhook");
  EXPECT_EQ(doc["run"]["deadline"], "2024-05-01T12:15:00Z");
  EXPECT_EQ(doc["lease"]["name"], "bot-heartbeat");
  EXPECT_LT(doc["lease"]["renewIntervalSeconds"], doc["lease"]["durationSeconds"]);
  // No secret material: only the Secret's name travels, in the Job env.
  EXPECT_EQ(doc.dump().find("sk-"), std::string::npos);
  EXPECT_FALSE(doc["model"].contains("apiKeySecretRef"));
}

TEST(JobBuilder, ArchivalClaimIsMountedReadWriteAndNamedInTheContext) {
  Json a = full_agent();
  Json r = run("bot-1");
  ContextInput in{nullptr, nullptr, "Heartbeat.", {}, at("2024-05-01T12:10:00Z")};
  // Not configured: no volume, and the context names no archival path (the
  // runner then leaves the archival tools out and says why).
  EXPECT_FALSE(render_stored(a, r, in, JobConfig{}).contains("archival"));
  EXPECT_FALSE(render_stored(a, r, in, JobConfig{}).contains("transcripts"));
  Json pod = build_stored_job(r, a, "{}", JobConfig{}).job["spec"]["template"]["spec"];
  for (const Json& v : pod["volumes"]) EXPECT_NE(v["name"], "archival");

  a["spec"]["memory"]["archival"] = {{"persistentVolumeClaimName", "bot-archive"}};
  EXPECT_EQ(render_stored(a, r, in, JobConfig{})["archival"]["path"],
            "/var/lib/heartbeat/archival/archival.sqlite3");
  // Transcripts go there too; those of the runs still kept stay.
  Json kept =
      with_status(run("bot-0"), {{"phase", "Succeeded"}, {"finishedAt", "2024-05-01T12:06:00Z"}});
  in.recent_runs = earlier_runs({&kept});
  const Json transcripts = render_stored(a, r, in, JobConfig{})["transcripts"];
  EXPECT_EQ(transcripts["dir"], "/var/lib/heartbeat/archival/transcripts");
  EXPECT_EQ(transcripts["keep"], Json::array({"bot-0"}));
  pod = build_stored_job(r, a, "{}", JobConfig{}).job["spec"]["template"]["spec"];
  EXPECT_EQ(
      pod["volumes"].back(),
      (Json{{"name", "archival"}, {"persistentVolumeClaim", {{"claimName", "bot-archive"}}}}));
  EXPECT_EQ(pod["containers"][0]["volumeMounts"].back(),
            (Json{{"name", "archival"}, {"mountPath", "/var/lib/heartbeat/archival"}}));
  EXPECT_EQ(pod["securityContext"]["fsGroup"], kRunnerUserId);  // the non-root runner can write
  // The root filesystem stays read-only; the claim and /tmp are the writable places.
  EXPECT_EQ(pod["containers"][0]["securityContext"]["readOnlyRootFilesystem"], true);
}

TEST(Names, DerivedNamesFitTheirLimits) {
  EXPECT_EQ(lease_name_for_agent("bot"), "bot-heartbeat");
  const std::string long_name(253, 'a');
  EXPECT_LE(lease_name_for_agent(long_name).size(), kObjectNameCharsMax);
  EXPECT_NE(lease_name_for_agent(long_name), lease_name_for_agent(long_name.substr(1) + "b"));
  EXPECT_EQ(label_safe_name("a.b"), "a-b-" + short_hash("a.b"));
}

const Json* named(const Json& list, const std::string& name) {
  for (const Json& item : list) {
    if (item["name"] == name) return &item;
  }
  return nullptr;
}

std::set<std::string> mounted_volumes(const Json& container) {
  std::set<std::string> out;
  for (const Json& m : container["volumeMounts"]) out.insert(m["name"].get<std::string>());
  return out;
}

// Trust boundaries: the agent's commands run in `tools`, which holds no key,
// no token, none of the runner's files and another user id.
TEST(JobBuilder, ToolsRunInTheirOwnContainerWithoutKeyOrToken) {
  Json a = full_agent();
  a["spec"]["model"]["apiKeySecretRef"] = {{"name", "llm"}, {"key", "key"}};
  JobPlan plan = build_stored_job(run("bot-1"), a, "{}", JobConfig{});
  const Json& pod = plan.job["spec"]["template"]["spec"];
  EXPECT_EQ(pod["automountServiceAccountToken"], false);
  EXPECT_EQ(pod["shareProcessNamespace"], false);
  ASSERT_EQ(pod["containers"].size(), 2u);
  const Json* runner = named(pod["containers"], api::kRunnerContainerName);
  const Json* tools = named(pod["containers"], api::kToolsContainerName);
  ASSERT_NE(runner, nullptr);
  ASSERT_NE(tools, nullptr);

  // The token: projected into the runner only.
  EXPECT_EQ(mounted_volumes(*runner).count(api::kServiceAccountVolume), 1u);
  const Json* sa = named(pod["volumes"], api::kServiceAccountVolume);
  ASSERT_NE(sa, nullptr);
  EXPECT_EQ((*sa)["projected"]["sources"][0]["serviceAccountToken"]["path"], "token");
  // The tools container sees the socket, its workspace and its tmp; nothing else.
  EXPECT_EQ(mounted_volumes(*tools),
            (std::set<std::string>{api::kToolsSocketVolume, api::kToolsWorkspaceVolume,
                                   api::kToolsTmpVolume}));
  EXPECT_EQ(mounted_volumes(*runner).count(api::kToolsWorkspaceVolume), 0u);
  // No environment at all: neither the key nor the user's runtime.env.
  EXPECT_FALSE(tools->contains("env"));
  EXPECT_FALSE(tools->contains("envFrom"));
  const Json& sc = (*tools)["securityContext"];
  EXPECT_EQ(sc["runAsUser"], api::kToolsUserId);
  EXPECT_EQ(sc["runAsGroup"], api::kToolsUserId);
  EXPECT_NE(sc["runAsUser"], pod["securityContext"]["runAsUser"]);
  EXPECT_EQ(sc["readOnlyRootFilesystem"], true);
  EXPECT_EQ(sc["allowPrivilegeEscalation"], false);
  EXPECT_EQ(sc["capabilities"]["drop"], Json::array({"ALL"}));
  EXPECT_EQ((*tools)["command"][0], api::kToolsServerPath);
  // The runner finds the server through the socket in the shared emptyDir.
  const Json* socket_env = named((*runner)["env"], api::kEnvToolsSocket);
  ASSERT_NE(socket_env, nullptr);
  EXPECT_EQ((*socket_env)["value"], std::string(api::kToolsSocketDir) + "/tools.sock");
  EXPECT_EQ((*tools)["command"][1], "--socket=" + (*socket_env)["value"].get<std::string>());
}

TEST(JobBuilder, ToolsImageResourcesAndRuntimeClass) {
  Json a = full_agent();
  JobConfig config;
  config.tools_image = "tools:1";
  config.tools_resources = {{"limits", {{"memory", "128Mi"}}}};
  JobPlan plan = build_stored_job(run("bot-1"), a, "{}", config);
  const Json* tools = named(plan.job["spec"]["template"]["spec"]["containers"], "tools");
  ASSERT_NE(tools, nullptr);
  EXPECT_EQ((*tools)["image"], "tools:1");
  EXPECT_EQ((*tools)["resources"]["limits"]["memory"], "128Mi");
  EXPECT_FALSE(plan.job["spec"]["template"]["spec"].contains("runtimeClassName"));

  a["spec"]["runtime"]["tools"] = {{"image", "git-tools:2"},
                                   {"resources", {{"limits", {{"cpu", "1"}}}}}};
  a["spec"]["runtime"]["runtimeClassName"] = "gvisor";
  plan = build_stored_job(run("bot-1"), a, "{}", config);
  const Json& pod = plan.job["spec"]["template"]["spec"];
  tools = named(pod["containers"], "tools");
  EXPECT_EQ((*tools)["image"], "git-tools:2");
  EXPECT_EQ((*tools)["resources"]["limits"]["cpu"], "1");
  EXPECT_EQ(pod["runtimeClassName"], "gvisor");

  // No tools image anywhere: the runner's image, which carries the server.
  plan = build_stored_job(run("bot-1"), full_agent(), "{}", JobConfig{});
  const Json& containers = plan.job["spec"]["template"]["spec"]["containers"];
  EXPECT_EQ((*named(containers, "tools"))["image"], (*named(containers, "runner"))["image"]);
}

TEST(JobBuilder, TheOperatorsOtlpSettingsReachTheRunnerOnlyUnlessTheAgentSetsThem) {
  JobPlan plan = build_stored_job(run("bot-1"), full_agent(), "{}", JobConfig{});
  const Json* runner = named(plan.job["spec"]["template"]["spec"]["containers"], "runner");
  EXPECT_EQ(named((*runner)["env"], "OTEL_EXPORTER_OTLP_ENDPOINT"), nullptr);

  JobConfig config;
  config.otel_endpoint = "http://collector:4318";
  config.otel_headers_secret = "otlp-headers";
  plan = build_stored_job(run("bot-1"), full_agent(), "{}", config);
  const Json& containers = plan.job["spec"]["template"]["spec"]["containers"];
  runner = named(containers, "runner");
  const Json* endpoint = named((*runner)["env"], "OTEL_EXPORTER_OTLP_ENDPOINT");
  ASSERT_NE(endpoint, nullptr);
  EXPECT_EQ((*endpoint)["value"], "http://collector:4318");
  const Json* headers = named((*runner)["env"], "OTEL_EXPORTER_OTLP_HEADERS");
  ASSERT_NE(headers, nullptr);
  EXPECT_EQ((*headers)["valueFrom"]["secretKeyRef"]["name"], "otlp-headers");
  EXPECT_EQ((*headers)["valueFrom"]["secretKeyRef"]["key"], "headers");
  EXPECT_EQ((*headers)["valueFrom"]["secretKeyRef"]["optional"], true);
  const Json* tools = named(containers, "tools");
  ASSERT_NE(tools, nullptr);
  EXPECT_EQ(tools->dump().find("OTEL_"), std::string::npos) << "the untrusted container gets none";

  Json agent = full_agent();
  agent["spec"]["runtime"]["env"] =
      Json::array({{{"name", "OTEL_EXPORTER_OTLP_ENDPOINT"}, {"value", "http://own:4318"}}});
  plan = build_stored_job(run("bot-1"), agent, "{}", config);
  runner = named(plan.job["spec"]["template"]["spec"]["containers"], "runner");
  int endpoints = 0;
  for (const Json& e : (*runner)["env"]) endpoints += e["name"] == "OTEL_EXPORTER_OTLP_ENDPOINT";
  EXPECT_EQ(endpoints, 1);
  EXPECT_EQ((*named((*runner)["env"], "OTEL_EXPORTER_OTLP_ENDPOINT"))["value"], "http://own:4318");
}

// The heartbeat's trace continues the run's: TRACEPARENT names the run's uid
// as the trace (api/trace_context.h); an Agent's own value wins.
TEST(JobBuilder, TheRunnerGetsTheRunsTraceContextAndTheOperatorsOptIn) {
  Json r = run("bot-1");
  r["metadata"]["uid"] = "7c9e6679-7425-40de-944b-e07fc1f90ae7";
  JobConfig config;
  config.semconv_opt_in = "gen_ai_latest_experimental";
  JobPlan plan = build_stored_job(r, full_agent(), "{}", config);
  const Json& containers = plan.job["spec"]["template"]["spec"]["containers"];
  const Json* runner = named(containers, "runner");
  const Json* traceparent = named((*runner)["env"], "TRACEPARENT");
  ASSERT_NE(traceparent, nullptr);
  const auto parent = api::parse_traceparent((*traceparent)["value"].get<std::string>());
  ASSERT_TRUE(parent.has_value()) << *traceparent;
  EXPECT_EQ(parent->trace_id, "7c9e6679742540de944be07fc1f90ae7");
  const Json* opt_in = named((*runner)["env"], "OTEL_SEMCONV_STABILITY_OPT_IN");
  ASSERT_NE(opt_in, nullptr);
  EXPECT_EQ((*opt_in)["value"], "gen_ai_latest_experimental");
  EXPECT_EQ(named(containers, "tools")->dump().find("TRACEPARENT"), std::string::npos);
  EXPECT_EQ(build_stored_job(r, full_agent(), "{}", config).job, plan.job)
      << "the same Job every time";

  Json agent = full_agent();
  agent["spec"]["runtime"]["env"] =
      Json::array({{{"name", "TRACEPARENT"},
                    {"value", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}},
                   {{"name", "OTEL_SEMCONV_STABILITY_OPT_IN"}, {"value", "http"}}});
  plan = build_stored_job(r, agent, "{}", JobConfig{});
  runner = named(plan.job["spec"]["template"]["spec"]["containers"], "runner");
  EXPECT_EQ((*named((*runner)["env"], "TRACEPARENT"))["value"],
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
  EXPECT_EQ((*named((*runner)["env"], "OTEL_SEMCONV_STABILITY_OPT_IN"))["value"], "http");

  r["metadata"]["uid"] = "not-a-uuid";
  plan = build_stored_job(r, full_agent(), "{}", JobConfig{});
  runner = named(plan.job["spec"]["template"]["spec"]["containers"], "runner");
  EXPECT_EQ(named((*runner)["env"], "TRACEPARENT"), nullptr);
  EXPECT_EQ(named((*runner)["env"], "OTEL_SEMCONV_STABILITY_OPT_IN"), nullptr);
}

// The operator's Lease and memory ConfigMap carry the labels the runner
// puts on them when it must create one (one definition: api/agent_objects.h).
TEST(JobBuilder, AgentObjectsCarryTheSharedLabelsAndMemoryFormat) {
  Json a = full_agent();
  a["spec"]["memory"]["blocks"] = Json::array({{{"label", "notes"}, {"value", "v"}}});
  for (const auto& [kind, object] : build_agent_objects(parse_agent_spec(a).spec, JobConfig{})) {
    if (kind != "leases" && kind != "configmaps") continue;
    EXPECT_EQ(object["metadata"]["labels"],
              Json(api::agent_object_labels(string_at(a, "metadata/name"))))
        << kind;
    if (kind == "configmaps") {
      const auto blocks = api::decode_memory_blocks(object["data"][api::kMemoryBlocksKey]).blocks;
      ASSERT_EQ(blocks.size(), 1u);
      EXPECT_EQ(blocks[0].limit, api::kCoreMemoryBlockLimitDefault);
    }
  }
}

TEST(JobBuilder, AContextPastTheBoundIsAReasonNotAThrow) {
  EXPECT_FALSE(context_too_large(api::kContextDocumentBytesMax, "spec.heartbeat.prompt", 10));
  const auto why = context_too_large(api::kContextDocumentBytesMax + 1, "spec.heartbeat.prompt", 7);
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("spec.heartbeat.prompt"), std::string::npos) << *why;
  EXPECT_NE(why->find("is 7 bytes"), std::string::npos) << *why;
}

// Without its own resources the runner gets the operator's default (the
// chart's runner.resources): a memory limit whatever the model sends.
TEST(JobBuilder, RunnerResourcesDefaultUnlessTheAgentSetsThem) {
  Json a = full_agent();
  a["spec"]["runtime"].erase("resources");
  JobConfig config;
  config.runner_resources = {{"limits", {{"memory", "128Mi"}}}};
  JobPlan plan = build_stored_job(run("bot-1"), a, "{}", config);
  const Json* runner = named(plan.job["spec"]["template"]["spec"]["containers"], "runner");
  ASSERT_NE(runner, nullptr);
  EXPECT_EQ((*runner)["resources"]["limits"]["memory"], "128Mi");
  a["spec"]["runtime"]["resources"] = {{"limits", {{"memory", "1Gi"}}}};
  plan = build_stored_job(run("bot-1"), a, "{}", config);
  runner = named(plan.job["spec"]["template"]["spec"]["containers"], "runner");
  EXPECT_EQ((*runner)["resources"]["limits"]["memory"], "1Gi");
}

TEST(JobBuilder, CommandModeHasNoToolsContainer) {
  Json a = full_agent();
  a["spec"]["runtime"]["mode"] = "command";
  a["spec"]["runtime"]["image"] = "mine:1";
  a["spec"]["runtime"]["command"] = Json::array({"/bin/agent"});
  JobPlan plan = build_stored_job(run("bot-1"), a, "{}", JobConfig{});
  const Json& pod = plan.job["spec"]["template"]["spec"];
  ASSERT_EQ(pod["containers"].size(), 1u);
  EXPECT_EQ(pod["automountServiceAccountToken"], false);
  EXPECT_EQ(named(pod["containers"][0]["env"], api::kEnvToolsSocket), nullptr);
  EXPECT_EQ(named(pod["volumes"], api::kToolsSocketVolume), nullptr);
}

// The context shows the newest contextRuns finished runs, oldest first;
// runs that finished the same second rank by name (the later name newer),
// as the cache's window does, so the context never asks for an output the
// cache dropped only because of a tie. Those it would show without one
// are named to be read again.
TEST(ContextDocument, RecentRunsRankTiesByNameAsTheCacheDoes) {
  auto finished = [](const std::string& name, const std::string& at, bool output_dropped) {
    Json r = {{"metadata", {{"name", name}}},
              {"status", {{"phase", "Succeeded"}, {"finishedAt", at}, {"output", name + " said"}}}};
    if (output_dropped) drop_output(r);
    return r;
  };
  const Json a = finished("bot-a", "2024-05-01T12:00:00Z", true);
  const Json b = finished("bot-b", "2024-05-01T12:00:00Z", false);
  const Json c = finished("bot-c", "2024-05-01T11:00:00Z", true);
  const Json current = {{"metadata", {{"name", "bot-d"}}}};
  const std::vector<EarlierRun> runs = earlier_runs({&a, &c, &b, &current});
  const auto shown = recent_runs_oldest_first(runs, "bot-d", 1);
  ASSERT_EQ(shown.size(), 1u);
  EXPECT_EQ(shown[0].name, "bot-b");
  EXPECT_TRUE(context_runs_to_read(runs, "bot-d", 1).empty());
  EXPECT_EQ(context_runs_to_read(runs, "bot-d", 3), (std::vector<std::string>{"bot-a", "bot-c"}));
  const auto three = recent_runs_oldest_first(runs, "bot-d", 3);
  ASSERT_EQ(three.size(), 3u);
  EXPECT_EQ(three[0].name, "bot-c");  // oldest first
  EXPECT_EQ(three[2].name, "bot-b");
  EXPECT_TRUE(context_runs_to_read(runs, "bot-d", 0).empty());
  EXPECT_TRUE(context_runs_to_read(runs, "bot-d", -5).empty());  // a hostile value: none
}

// Every run of the agent keeps its name (an archival claim keeps their
// transcripts); only a finished one is read further, as stored.
TEST(ContextDocument, EarlierRunsReadFinishedRunsAsStored) {
  const Json done = with_status(run("bot-0"), {{"phase", "Failed"},
                                               {"finishedAt", "2024-05-01T12:06:00Z"},
                                               {"stopReason", "max_iterations"},
                                               {"output", std::string(5000, 'x')}});
  const Json running = with_status(run("bot-1"), {{"phase", "Running"}, {"output", "partial"}});
  const std::vector<EarlierRun> runs = earlier_runs({&done, nullptr, &running});
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].name, "bot-0");
  EXPECT_EQ(runs[0].finished_at_text, "2024-05-01T12:06:00Z");
  EXPECT_EQ(runs[0].phase, "Failed");
  EXPECT_EQ(runs[0].stop_reason, "max_iterations");
  EXPECT_EQ(runs[0].output.size(), api::kRecentRunOutputBytesMax);
  EXPECT_EQ(runs[1].name, "bot-1");
  EXPECT_FALSE(runs[1].finished_at);
  EXPECT_TRUE(runs[1].output.empty());
}

}  // namespace
}  // namespace hb::controllers
