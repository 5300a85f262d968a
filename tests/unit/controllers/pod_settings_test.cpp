// Pod settings for real clusters: what reaches the Job, what the fleet
// defaults give, and every override that would loosen the Pod refused with
// its field named.
#include "controllers/model/pod_settings.h"

#include <gtest/gtest.h>

#include "controllers/model/agent_spec.h"
#include "controllers/pod/job_builder.h"
#include "tests/unit/controllers/fixtures.h"

namespace hb::controllers {
namespace {

using namespace hb::controllers::testing;

Json settings() {
  return {
      {"imagePullSecrets", Json::array({{{"name", "registry"}}})},
      {"nodeSelector", {{"pool", "agents"}}},
      {"tolerations",
       Json::array({{{"key", "agents"}, {"operator", "Exists"}, {"effect", "NoSchedule"}}})},
      {"affinity",
       {{"nodeAffinity",
         {{"requiredDuringSchedulingIgnoredDuringExecution",
           {{"nodeSelectorTerms",
             Json::array(
                 {{{"matchExpressions", Json::array({{{"key", "zone"},
                                                      {"operator", "In"},
                                                      {"values", Json::array({"a"})}}})}}})}}}}}}},
      {"priorityClassName", "agents-low"},
      {"podLabels", {{"team", "a"}}},
      {"podAnnotations", {{"example.com/owner", "team-a"}}},
      {"volumes",
       Json::array({{{"name", "ca"}, {"configMap", {{"name", "corp-ca"}}}},
                    {{"name", "repo"}, {"persistentVolumeClaim", {{"claimName", "repo"}}}}})},
      {"volumeMounts",
       Json::array({{{"name", "ca"}, {"mountPath", "/etc/corp-ca"}, {"readOnly", true}}})},
      {"tools", {{"volumeMounts", Json::array({{{"name", "repo"}, {"mountPath", "/srv/repo"}}})}}}};
}

Json agent_with(const Json& runtime) {
  Json a = agent();
  a["spec"]["runtime"].update(runtime);
  return a;
}

const Json& pod_of(const JobPlan& plan) {
  return plan.job["spec"]["template"]["spec"];
}

TEST(PodSettings, ReachTheJobAndNeverTakeTheOperatorsPlaces) {
  const Json a = agent_with(settings());
  ASSERT_TRUE(check_agent_spec(a, {}).valid()) << check_agent_spec(a, {}).message();
  const JobPlan plan = build_stored_job(run("bot-1"), a, "{}", JobConfig{});
  const Json& pod = pod_of(plan);
  EXPECT_EQ(pod["imagePullSecrets"][0]["name"], "registry");
  EXPECT_EQ(pod["nodeSelector"]["pool"], "agents");
  EXPECT_EQ(pod["tolerations"][0]["key"], "agents");
  EXPECT_EQ(pod["priorityClassName"], "agents-low");
  EXPECT_TRUE(pod["affinity"].contains("nodeAffinity"));
  const Json& metadata = plan.job["spec"]["template"]["metadata"];
  EXPECT_EQ(metadata["labels"]["team"], "a");
  EXPECT_EQ(metadata["labels"]["heartbeat.dev/agent"], "bot");  // still the operator's
  EXPECT_EQ(metadata["annotations"]["example.com/owner"], "team-a");
  EXPECT_EQ(metadata["annotations"]["heartbeat.dev/run-name"], "bot-1");
  EXPECT_EQ(pod["volumes"].back()["name"], "repo");
  const Json& runner = pod["containers"][0];
  const Json& tools = pod["containers"][1];
  EXPECT_EQ(runner["volumeMounts"].back()["mountPath"], "/etc/corp-ca");
  EXPECT_EQ(tools["volumeMounts"].back()["mountPath"], "/srv/repo");
  for (const Json& m : tools["volumeMounts"]) EXPECT_NE(m["name"], api::kServiceAccountVolume);
  // The restricted security context is untouched.
  EXPECT_EQ(pod["securityContext"]["runAsNonRoot"], true);
  EXPECT_EQ(runner["securityContext"]["privileged"], false);
  EXPECT_EQ(tools["securityContext"]["capabilities"]["drop"][0], "ALL");
}

TEST(PodSettings, FleetDefaultsApplyAndTheAgentOverridesEach) {
  JobConfig config;
  config.pod_defaults = {{"nodeSelector", {{"pool", "shared"}}},
                         {"priorityClassName", "fleet"},
                         {"podLabels", {{"cost-center", "42"}, {"team", "platform"}}},
                         {"imagePullSecrets", Json::array({{{"name", "fleet-registry"}}})}};
  Json pod = pod_of(build_stored_job(run("bot-1"), agent(), "{}", config));
  EXPECT_EQ(pod["nodeSelector"]["pool"], "shared");
  EXPECT_EQ(pod["priorityClassName"], "fleet");
  EXPECT_EQ(pod["imagePullSecrets"][0]["name"], "fleet-registry");
  const Json own = {{"nodeSelector", {{"pool", "gpu"}}}, {"podLabels", {{"team", "a"}}}};
  const JobPlan plan = build_stored_job(run("bot-1"), agent_with(own), "{}", config);
  pod = pod_of(plan);
  EXPECT_EQ(pod["nodeSelector"], Json({{"pool", "gpu"}}));  // replaced, not merged
  EXPECT_EQ(pod["priorityClassName"], "fleet");
  const Json& labels = plan.job["spec"]["template"]["metadata"]["labels"];
  EXPECT_EQ(labels["team"], "a");          // the Agent's key wins
  EXPECT_EQ(labels["cost-center"], "42");  // the fleet's other keys stay
}

// Each override that would loosen the Pod or take the operator's names is
// refused, naming the field (the Agent becomes Stalled with it).
TEST(PodSettings, HostileOverridesAreRefusedWithTheFieldNamed) {
  struct Case {
    Json runtime;
    const char* field;
  };
  const Json ca = {{"name", "ca"}, {"configMap", {{"name", "corp-ca"}}}};
  auto mount = [](const char* name, const char* path) {
    return Json::array({{{"name", name}, {"mountPath", path}}});
  };
  const std::vector<Case> cases = {
      {{{"volumes", Json::array({{{"name", "host"}, {"hostPath", {{"path", "/"}}}}})}},
       "spec.runtime.volumes[0].hostPath"},
      {{{"volumes", Json::array({{{"name", "kube-api-access"}, {"emptyDir", Json::object()}}})}},
       "spec.runtime.volumes[0].name"},
      // The token volume into the agent's container: not a user volume.
      {{{"tools", {{"volumeMounts", mount("kube-api-access", "/token")}}}},
       "spec.runtime.tools.volumeMounts[0].name"},
      {{{"volumes", Json::array({ca})},
        {"tools", {{"volumeMounts", mount("ca", "/var/run/secrets/kubernetes.io")}}}},
       "spec.runtime.tools.volumeMounts[0].mountPath"},
      {{{"volumes", Json::array({ca})}, {"volumeMounts", mount("ca", "/")}},
       "spec.runtime.volumeMounts[0].mountPath"},
      {{{"volumes", Json::array({ca})}, {"volumeMounts", mount("ca", "/tmp/ca")}},
       "spec.runtime.volumeMounts[0].mountPath"},
      {{{"volumes", Json::array({ca})}, {"volumeMounts", mount("ca", "/etc/../run")}},
       "spec.runtime.volumeMounts[0].mountPath"},
      {{{"volumes", Json::array({ca})},
        {"volumeMounts",
         Json::array({{{"name", "ca"}, {"mountPath", "/ca"}, {"subPath", "../x"}}})}},
       "spec.runtime.volumeMounts[0].subPath"},
      {{{"volumes", Json::array({ca, ca})}}, "spec.runtime.volumes[1].name"},
      {{{"volumes",
         Json::array(
             {{{"name", "two"}, {"emptyDir", Json::object()}, {"secret", Json::object()}}})}},
       "spec.runtime.volumes[0]"},
      {{{"podLabels", {{"heartbeat.dev/agent", "other"}}}},
       "spec.runtime.podLabels[\"heartbeat.dev/agent\"]"},
      {{{"podLabels", {{"job-name", "x"}}}}, "spec.runtime.podLabels[\"job-name\"]"},
      {{{"podLabels", {{"team", "not a value"}}}}, "spec.runtime.podLabels[\"team\"]"},
      {{{"podAnnotations", {{"heartbeat.dev/context", "{}"}}}},
       "spec.runtime.podAnnotations[\"heartbeat.dev/context\"]"},
      {{{"podAnnotations", {{"big", std::string(kPodAnnotationsBytesMax, 'x')}}}},
       "spec.runtime.podAnnotations"},
      {{{"tolerations", Json::array({{{"operator", "Exists"}, {"value", "x"}}})}},
       "spec.runtime.tolerations[0].value"},
      {{{"tolerations", Json::array({{{"key", "a"}, {"tolerationSeconds", 5}}})}},
       "spec.runtime.tolerations[0].tolerationSeconds"},
      {{{"priorityClassName", "Not_A_Name"}}, "spec.runtime.priorityClassName"},
      {{{"imagePullSecrets", Json::array({{{"name", ""}}})}},
       "spec.runtime.imagePullSecrets[0].name"},
      {{{"affinity", "anywhere"}}, "spec.runtime.affinity"},
      // A second copy of the runner's token, for the agent's container.
      {{{"volumes",
         Json::array(
             {{{"name", "token"},
               {"projected",
                {{"sources", Json::array({{{"configMap", {{"name", "x"}}}},
                                          {{"serviceAccountToken", {{"path", "t"}}}}})}}}}})},
        {"tools", {{"volumeMounts", mount("token", "/token")}}}},
       "spec.runtime.volumes[0].projected.sources[1].serviceAccountToken"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.runtime.dump().substr(0, 200));
    const SpecCheck check = check_agent_spec(agent_with(c.runtime), {});
    ASSERT_FALSE(check.valid());
    EXPECT_NE(check.message().find(c.field), std::string::npos) << check.message();
  }
}

}  // namespace
}  // namespace hb::controllers
