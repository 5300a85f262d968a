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
