// The manager's flags: the watched namespaces list, the write-saving defaults.
#include "operator/config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace hb::operator_ {
namespace {

ConfigResult parse(const std::vector<std::string>& args) {
  return parse_config(args, [](const std::string&) { return std::nullopt; });
}

TEST(OperatorConfig, NoNamespaceFlagWatchesAllNamespaces) {
  ConfigResult r = parse({});
  ASSERT_TRUE(r.config) << r.error;
  EXPECT_TRUE(r.config->watch_namespaces.empty());
}

TEST(OperatorConfig, NamespaceListIsTrimmedDeduplicatedAndKeepsItsOrder) {
  ConfigResult r = parse({"--namespace=team-b, team-a,,team-b"});
  ASSERT_TRUE(r.config) << r.error;
  EXPECT_EQ(r.config->watch_namespaces, (std::vector<std::string>{"team-b", "team-a"}));
  r = parse({"--namespace", "solo"});
  ASSERT_TRUE(r.config) << r.error;
  EXPECT_EQ(r.config->watch_namespaces, (std::vector<std::string>{"solo"}));
}

TEST(OperatorConfig, EnvironmentGivesTheNamespacesWhenTheFlagIsAbsent) {
  ConfigResult r = parse_config({}, [](const std::string& name) -> std::optional<std::string> {
    if (name == "HB_NAMESPACE") return "a,b";
    return std::nullopt;
  });
  ASSERT_TRUE(r.config) << r.error;
  EXPECT_EQ(r.config->watch_namespaces, (std::vector<std::string>{"a", "b"}));
}

TEST(OperatorConfig, ABadNamespaceIsRejectedNamingTheFlagAndTheEntry) {
  for (const char* bad : {"Team-A", "a,-b", "a;b", "ns_1", "b-"}) {
    ConfigResult r = parse({std::string("--namespace=") + bad});
    EXPECT_FALSE(r.config) << bad;
    EXPECT_THAT(r.error, ::testing::HasSubstr("--namespace")) << bad;
    EXPECT_THAT(r.error, ::testing::HasSubstr("is not a namespace name")) << bad;
  }
  std::string error;
  EXPECT_FALSE(parse_namespace_list(std::string(64, 'a'), error));
  EXPECT_TRUE(parse_namespace_list(std::string(63, 'a'), error));
}

// The chart's podDefaults: checked as an Agent's spec.runtime is, plus only
// the fields a fleet default may set; the error names the flag and field.
TEST(OperatorConfig, PodDefaultsAreCheckedAndNamed) {
  ConfigResult r = parse({R"(--pod-defaults={"nodeSelector":{"pool":"agents"},)"
                          R"("imagePullSecrets":[{"name":"registry"}]})"});
  ASSERT_TRUE(r.config) << r.error;
  EXPECT_EQ(r.config->job.pod_defaults["nodeSelector"]["pool"], "agents");
  const std::vector<std::pair<std::string, std::string>> bad = {
      {R"({"volumes":[{"name":"x","emptyDir":{}}]})", "unknown key volumes"},
      {R"({"podLabels":{"heartbeat.dev/run":"x"}})", "--pod-defaults.podLabels"},
      {R"({"tolerations":[{"operator":"Exists","value":"v"}]})",
       "--pod-defaults.tolerations[0].value"},
      {"[1,2]", "not a JSON object"},
      {"{", "not a JSON object"},
  };
  for (const auto& [value, says] : bad) {
    r = parse({"--pod-defaults=" + value});
    EXPECT_FALSE(r.config) << value;
    EXPECT_THAT(r.error, ::testing::HasSubstr("--pod-defaults")) << value;
    EXPECT_THAT(r.error, ::testing::HasSubstr(says)) << value;
  }
}

TEST(OperatorConfig, StatusCoalescingAndContextTransportDefaultsSaveWrites) {
  ConfigResult r = parse({});
  ASSERT_TRUE(r.config) << r.error;
  EXPECT_EQ(r.config->status_coalesce, controllers::kStatusCoalesceSecondsDefault);
  EXPECT_EQ(r.config->job.context_transport, controllers::ContextTransport::kAnnotation);
  r = parse({"--status-coalesce-seconds=0", "--context-transport=configmap"});
  ASSERT_TRUE(r.config) << r.error;
  EXPECT_EQ(r.config->status_coalesce.count(), 0);
  EXPECT_EQ(r.config->job.context_transport, controllers::ContextTransport::kConfigMap);
  for (const char* bad : {"-1", "301", "5s", ""}) {
    r = parse({std::string("--status-coalesce-seconds=") + bad});
    EXPECT_FALSE(r.config) << bad;
    EXPECT_THAT(r.error, ::testing::HasSubstr("--status-coalesce-seconds")) << bad;
  }
}

TEST(OperatorConfig, RunRetentionIsThirtyDaysByDefaultAndTakesDurationsOrDays) {
  ConfigResult r = parse({});
  ASSERT_TRUE(r.config) << r.error;
  EXPECT_EQ(r.config->run_retention, controllers::kRunRetentionDefault);
  r = parse({"--run-retention=90d"});
  ASSERT_TRUE(r.config) << r.error;
  EXPECT_EQ(r.config->run_retention, std::chrono::hours(24 * 90));
  r = parse({"--run-retention=0"});
  ASSERT_TRUE(r.config) << r.error;
  EXPECT_EQ(r.config->run_retention.count(), 0);
  for (const char* bad : {"-1d", "ever", "3651d", ""}) {
    r = parse({std::string("--run-retention=") + bad});
    EXPECT_FALSE(r.config) << bad;
    EXPECT_THAT(r.error, ::testing::HasSubstr("--run-retention")) << bad;
  }
}

TEST(OperatorConfig, TheConcurrencyCapIsOffByDefaultAndBounded) {
  ConfigResult r = parse({});
  ASSERT_TRUE(r.config) << r.error;
  EXPECT_EQ(r.config->max_concurrent_runs, 0);
  r = parse({"--max-concurrent-runs=2"});
  ASSERT_TRUE(r.config) << r.error;
  EXPECT_EQ(r.config->max_concurrent_runs, 2);
  for (const char* bad : {"-1", "100001", "2.5", "two", "", "99999999999999999999"}) {
    r = parse({std::string("--max-concurrent-runs=") + bad});
    EXPECT_FALSE(r.config) << bad;
    EXPECT_THAT(r.error, ::testing::HasSubstr("--max-concurrent-runs")) << bad;
  }
}

}  // namespace
}  // namespace hb::operator_

namespace hb::operator_ {
namespace {

TEST(OperatorConfig, RunnerTracesAreOffByDefaultAndTakeAnHttpEndpoint) {
  ConfigResult r = parse({});
  ASSERT_TRUE(r.config) << r.error;
  EXPECT_EQ(r.config->job.otel_endpoint, "");
  r = parse({"--runner-otel-endpoint=http://collector.obs:4318",
             "--runner-otel-headers-secret=otlp-headers"});
  ASSERT_TRUE(r.config) << r.error;
  EXPECT_EQ(r.config->job.otel_endpoint, "http://collector.obs:4318");
  EXPECT_EQ(r.config->job.otel_headers_secret, "otlp-headers");
  r = parse({"--runner-otel-endpoint=collector:4317"});
  EXPECT_FALSE(r.config);
  EXPECT_THAT(r.error, ::testing::HasSubstr("--runner-otel-endpoint"));
}

// The conventions' opt-in is the standard variable, read by the operator and
// passed on to its runners.
TEST(OperatorConfig, TheSemconvOptInComesFromTheEnvironment) {
  EXPECT_EQ(parse({}).config->job.semconv_opt_in, "");
  ConfigResult r = parse_config({}, [](const std::string& name) -> std::optional<std::string> {
    if (name == "OTEL_SEMCONV_STABILITY_OPT_IN") return "gen_ai_latest_experimental";
    return std::nullopt;
  });
  ASSERT_TRUE(r.config) << r.error;
  EXPECT_EQ(r.config->job.semconv_opt_in, "gen_ai_latest_experimental");
}

TEST(OperatorConfig, MetricsAreServedOverTlsWheneverTheyAskForATokenUnlessOptedOut) {
  ConfigResult r = parse({});
  ASSERT_TRUE(r.config) << r.error;
  EXPECT_TRUE(r.config->metrics_auth);
  EXPECT_TRUE(r.config->metrics_secure);
  EXPECT_EQ(r.config->metrics_cert_dir, "");
  EXPECT_EQ(r.config->metrics_cert_hosts, (std::vector<std::string>{"localhost"}));
  r = parse({"--metrics-secure=false"});
  ASSERT_TRUE(r.config) << r.error;
  EXPECT_FALSE(r.config->metrics_secure);
  r = parse({"--metrics-auth=none"});
  ASSERT_TRUE(r.config) << r.error;
  EXPECT_FALSE(r.config->metrics_secure);
  r = parse({"--metrics-auth=none", "--metrics-secure"});
  ASSERT_TRUE(r.config) << r.error;
  EXPECT_TRUE(r.config->metrics_secure);
  r = parse({"--metrics-cert-dir=/certs", "--metrics-cert-hosts=hb-metrics.ops.svc, localhost"});
  ASSERT_TRUE(r.config) << r.error;
  EXPECT_EQ(r.config->metrics_cert_dir, "/certs");
  EXPECT_EQ(r.config->metrics_cert_hosts,
            (std::vector<std::string>{"hb-metrics.ops.svc", "localhost"}));
  EXPECT_THAT(usage(), ::testing::HasSubstr("--metrics-secure"));
}

TEST(OperatorConfig, TlsMetricsNeedAnAddressOfTheirOwn) {
  ConfigResult r = parse({"--metrics-address=0.0.0.0:9000", "--health-address=0.0.0.0:9000"});
  EXPECT_FALSE(r.config);
  EXPECT_THAT(r.error, ::testing::HasSubstr("--health-address is the same address"));
  r = parse({"--metrics-address=0.0.0.0:9000", "--wakeup-address=0.0.0.0:9000"});
  EXPECT_THAT(r.error, ::testing::HasSubstr("--wakeup-address is the same address"));
  r = parse({"--metrics-address=0.0.0.0:9000", "--health-address=0.0.0.0:9000",
             "--metrics-secure=false"});
  EXPECT_TRUE(r.config) << r.error;
  r = parse({"--metrics-secure=false", "--metrics-cert-dir=/certs"});
  EXPECT_THAT(r.error, ::testing::HasSubstr("--metrics-cert-dir is given but"));
  r = parse({"--metrics-secure=maybe"});
  EXPECT_THAT(r.error, ::testing::HasSubstr("--metrics-secure \"maybe\": use true or false"));
  r = parse({"--metrics-cert-hosts=,"});
  EXPECT_THAT(r.error, ::testing::HasSubstr("name at least one host"));
}

TEST(OperatorConfig, TheTestClockOffsetIsHiddenAndBounded) {
  EXPECT_EQ(parse({"--testing-clock-offset-seconds=-40"}).config->testing_clock_offset,
            std::chrono::seconds(-40));
  EXPECT_NE(parse({"--testing-clock-offset-seconds=99999"}).error, "");
  EXPECT_EQ(usage().find("testing-clock-offset"), std::string::npos);
}

}  // namespace
}  // namespace hb::operator_

namespace hb::operator_ {
namespace {

// Each flag's refusal, word for word: scripts and the chart's users match them.
TEST(OperatorConfig, EveryFlagNamesItsValueAndWhatItTakes) {
  const std::vector<std::pair<std::string, std::string>> refused = {
      {"--leader-elect=maybe", "--leader-elect \"maybe\": use true or false"},
      {"--routine-events=2", "--routine-events \"2\": use true or false"},
      {"--metrics-auth=token", "--metrics-auth \"token\": use kubernetes or none"},
      {"--otel-endpoint=collector:4318",
       "--otel-endpoint \"collector:4318\": use an http:// or "
       "https:// URL"},
      {"--agent-metrics-max=100001",
       "--agent-metrics-max \"100001\": use a whole number between 0 and 100000"},
      {"--agent-metrics-max=-1",
       "--agent-metrics-max \"-1\": use a whole number between 0 and "
       "100000"},
      {"--runner-resources={\"limits\":[]}",
       "--runner-resources \"{\"limits\":[]}\": limits is "
       "not an object"},
      {"--tools-resources={\"cpu\":{}}",
       "--tools-resources \"{\"cpu\":{}}\": unknown key cpu; "
       "use limits and requests"},
      {"--tools-resources=[]", "--tools-resources \"[]\": not a JSON object"},
      {"--image-pull-policy=Sometimes",
       "--image-pull-policy \"Sometimes\": use Always, IfNotPresent or Never"},
      {"--stall-timeout=9", "--stall-timeout \"9\": use whole seconds between 10 and 86400"},
      {"--stall-timeout=86401",
       "--stall-timeout \"86401\": use whole seconds between 10 and "
       "86400"},
      {"--testing-clock-offset-seconds=-3601",
       "--testing-clock-offset-seconds \"-3601\": use whole seconds between -3600 and 3600"},
      {"--context-transport=file", "--context-transport \"file\": use configmap or annotation"},
      {"--status-coalesce-seconds=301",
       "--status-coalesce-seconds \"301\": use whole seconds between 0 and 300"},
      {"--workers=0", "--workers \"0\": use a number between 1 and 64"},
      {"--workers=65", "--workers \"65\": use a number between 1 and 64"},
      {"--max-concurrent-runs=-1",
       "--max-concurrent-runs \"-1\": use a number between 0 (no cap) and 100000"},
      {"--watch-timeout-seconds=3601",
       "--watch-timeout-seconds \"3601\": use whole seconds between 1 and 3600"},
      {"--watch-timeout-seconds=0",
       "--watch-timeout-seconds \"0\": use whole seconds between 1 "
       "and 3600"},
      {"--qps=-1", "--qps \"-1\": use a non-negative number"},
      {"--burst=0", "--burst \"0\": use a positive number"},
      {"--log-level=verbose", "--log-level \"verbose\": use trace, debug, info, warn or error"},
      {"--log-format=xml", "--log-format \"xml\": use json or text"},
      // Empty, the spend ledger would be read from every namespace, tenants' included.
      {"--leader-election-namespace=",
       "--leader-election-namespace \"\": use one namespace name, where the operator keeps its "
       "Lease"},
      {"--leader-election-namespace=a,b",
       "--leader-election-namespace \"a,b\": use one namespace name, where the operator keeps "
       "its Lease"},
      {"--leader-election-namespace=Ops",
       "--leader-election-namespace \"Ops\": \"Ops\" is not a namespace name (lowercase letters, "
       "digits and '-', at most 63, starting and ending with a letter or digit); separate several "
       "with commas"},
      {"--metrics-address=", "--metrics-address and --health-address may not be empty"},
      {"--health-address=", "--metrics-address and --health-address may not be empty"},
  };
  for (const auto& [arg, error] : refused) {
    ConfigResult r = parse({arg});
    EXPECT_FALSE(r.config) << arg;
    EXPECT_EQ(r.error, error) << arg;
  }
}

TEST(OperatorConfig, EveryFlagSetsItsSetting) {
  ConfigResult r = parse({"--kubeconfig=/k",
                          "--context=c",
                          "--leader-elect=no",
                          "--leader-election-namespace=le",
                          "--leader-election-id=id",
                          "--metrics-address=:1",
                          "--metrics-auth=none",
                          "--health-address=:2",
                          "--wakeup-address=",
                          "--wakeup-token-secret=wt",
                          "--runner-image=ri",
                          "--tools-image=ti",
                          "--otel-endpoint=https://o",
                          "--tools-resources={\"limits\":{\"memory\":\"1Gi\"}}",
                          "--image-pull-policy=Never",
                          "--stall-timeout=60",
                          "--context-transport=configmap",
                          "--routine-events",
                          "--status-coalesce-seconds=0",
                          "--workers=8",
                          "--watch-timeout-seconds=60",
                          "--qps=2.5",
                          "--burst=7",
                          "--log-level=debug",
                          "--log-format=text",
                          "--agent-metrics-max=0"});
  ASSERT_TRUE(r.config) << r.error;
  const Config& c = *r.config;
  EXPECT_EQ(c.kubeconfig, "/k");
  EXPECT_EQ(c.context, "c");
  EXPECT_FALSE(c.leader_elect);
  EXPECT_EQ(c.leader_election_namespace, "le");
  EXPECT_EQ(c.leader_election_id, "id");
  EXPECT_EQ(c.metrics_address, ":1");
  EXPECT_FALSE(c.metrics_auth);
  EXPECT_FALSE(c.metrics_secure);
  EXPECT_EQ(c.health_address, ":2");
  EXPECT_EQ(c.wakeup_address, "");
  EXPECT_EQ(c.wakeup_token_secret, "wt");
  EXPECT_EQ(c.job.default_image, "ri");
  EXPECT_EQ(c.job.tools_image, "ti");
  EXPECT_EQ(c.otel_endpoint, "https://o");
  EXPECT_EQ(c.job.tools_resources["limits"]["memory"], "1Gi");
  EXPECT_EQ(c.job.image_pull_policy, "Never");
  EXPECT_EQ(c.job.stall_window, std::chrono::seconds(60));
  EXPECT_EQ(c.job.context_transport, controllers::ContextTransport::kConfigMap);
  EXPECT_TRUE(c.routine_events);
  EXPECT_EQ(c.status_coalesce, std::chrono::seconds(0));
  EXPECT_EQ(c.workers, 8);
  EXPECT_EQ(c.watch_timeout_seconds, 60);
  EXPECT_EQ(c.qps, 2.5);
  EXPECT_EQ(c.burst, 7);
  EXPECT_EQ(c.log_level, "debug");
  EXPECT_EQ(c.log_format, "text");
  EXPECT_EQ(c.agent_metrics_max, 0u);
}

TEST(OperatorConfig, TheCommandLineWinsOverTheEnvironmentAndStopsAtItsFirstFault) {
  const EnvLookup env = [](const std::string& name) -> std::optional<std::string> {
    if (name == "HB_WORKERS") return "3";
    if (name == "HB_LOG_LEVEL") return "warn";
    if (name == "POD_NAMESPACE") return "ops";
    return std::nullopt;
  };
  ConfigResult r = parse_config({"--workers", "5"}, env);
  ASSERT_TRUE(r.config) << r.error;
  EXPECT_EQ(r.config->workers, 5);
  EXPECT_EQ(r.config->log_level, "warn");
  EXPECT_EQ(r.config->own_namespace, "ops");
  EXPECT_EQ(r.config->leader_election_namespace, "ops");
  EXPECT_EQ(parse_config({"--leader-election-namespace=le"}, env).config->leader_election_namespace,
            "le");
  EXPECT_TRUE(parse({"--workers=0", "--help"}).help);
  r = parse({"-h", "--bogus"});
  EXPECT_TRUE(r.help);
  EXPECT_FALSE(r.config);
  EXPECT_EQ(parse({"--bogus", "--help"}).error, "unknown flag --bogus (see --help)");
  EXPECT_EQ(parse({"workers"}).error, "unexpected argument \"workers\"");
  EXPECT_EQ(parse({"--workers"}).error, "--workers: needs a value");
  EXPECT_EQ(parse({"--bogus"}).error, "--bogus: needs a value");
  // Flags are checked in the order of their names, whatever the command line's.
  EXPECT_EQ(parse({"--workers=0", "--burst=0"}).error, "--burst \"0\": use a positive number");
  EXPECT_EQ(parse({"--leader-elect", "--workers=2"}).config->leader_elect, true);
}

}  // namespace
}  // namespace hb::operator_
