#include "kube/kubeconfig.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace hb::kube {
namespace {

namespace fs = std::filesystem;

class KubeconfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("hb-kubeconfig-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_ / "certs");
    write("certs/ca.crt", "CA-PEM");
    write("certs/client.crt", "CERT-PEM");
    write("certs/client.key", "KEY-PEM");
    write("token", "tok-from-file\n");
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name) << text;
    return (dir_ / name).string();
  }

  fs::path dir_;
};

constexpr const char* kTwoContexts = R"(
apiVersion: v1
kind: Config
current-context: dev
clusters:
- name: dev-cluster
  cluster:
    server: https://10.1.2.3:6443/
    certificate-authority: certs/ca.crt
- name: prod-cluster
  cluster:
    server: https://[fd00::1]:443
    certificate-authority-data: UFJPRC1DQQ==
    insecure-skip-tls-verify: false
users:
- name: dev-user
  user:
    client-certificate: certs/client.crt
    client-key: certs/client.key
- name: prod-user
  user:
    token: prod-token
contexts:
- name: dev
  context: {cluster: dev-cluster, user: dev-user, namespace: team-a}
- name: prod
  context: {cluster: prod-cluster, user: prod-user}
)";

TEST_F(KubeconfigTest, CurrentContextWithRelativeFilePaths) {
  auto path = write("config", kTwoContexts);
  ClusterConfig c = load_kubeconfig_file(path).or_throw();
  EXPECT_EQ(c.server, "https://10.1.2.3:6443");  // trailing slash dropped
  EXPECT_EQ(c.tls.ca_pem, "CA-PEM");             // resolved against the file's folder
  EXPECT_EQ(c.tls.client_cert_pem, "CERT-PEM");
  EXPECT_EQ(c.tls.client_key_pem, "KEY-PEM");
  EXPECT_EQ(c.default_namespace, "team-a");
  EXPECT_NE(c.ca_description.find("certs/ca.crt"), std::string::npos);
  EXPECT_NE(c.source.find("context dev"), std::string::npos);
}

TEST_F(KubeconfigTest, ContextOverrideWithInlineDataAndToken) {
  auto path = write("config", kTwoContexts);
  ClusterConfig c = load_kubeconfig_file(path, "prod").or_throw();
  EXPECT_EQ(c.server, "https://[fd00::1]:443");
  EXPECT_EQ(c.tls.ca_pem, "PROD-CA");
  EXPECT_EQ(c.token, "prod-token");
  EXPECT_EQ(c.default_namespace, "default");
  EXPECT_FALSE(c.tls.insecure_skip_verify);
}

TEST_F(KubeconfigTest, InsecureSkipVerifyAndTokenFile) {
  auto path = write("config", R"(
current-context: x
clusters: [{name: c, cluster: {server: "https://h:1", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {tokenFile: token}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
)");
  ClusterConfig c = load_kubeconfig_file(path).or_throw();
  EXPECT_TRUE(c.tls.insecure_skip_verify);
  EXPECT_EQ(c.token_file, (dir_ / "token").string());
  TokenSource tokens(c);
  EXPECT_EQ(tokens.token(), "tok-from-file");
}

void expect_error(const std::string& text, const std::vector<std::string>& needles,
                  const std::string& path = "/etc/k/config", const std::string& context = "") {
  const Result<ClusterConfig> parsed = parse_kubeconfig(text, path, context);
  ASSERT_FALSE(parsed.ok()) << "expected an Error for:\n" << text;
  EXPECT_EQ(parsed.error().kind, ErrorKind::kConfig);
  const std::string what = parsed.error().describe();
  for (const auto& needle : needles) {
    EXPECT_NE(what.find(needle), std::string::npos)
        << "message \"" << what << "\" lacks \"" << needle << "\"";
  }
}

TEST_F(KubeconfigTest, BrokenFilesNameTheFileAndKey) {
  expect_error("clusters: [", {"/etc/k/config", "not valid YAML", "line"});
  expect_error("just a string", {"/etc/k/config", "must be a map"});
  expect_error("clusters: []\ncontexts: []\n", {"current-context", "is empty"});
  expect_error("current-context: a\ncontexts: []\n", {"current-context", "names context \"a\""});
  expect_error(R"(
current-context: a
contexts: [{name: a, context: {cluster: c, user: u}}]
clusters: [{name: c, cluster: {certificate-authority-data: QQ==}}]
users: [{name: u, user: {token: t}}]
)",
               {"clusters[name=c].cluster.server", "is missing"});
  expect_error(R"(
current-context: a
contexts: [{name: a, context: {cluster: c, user: u}}]
clusters: [{name: c, cluster: {server: "ftp://x"}}]
users: [{name: u, user: {token: t}}]
)",
               {"clusters[name=c].cluster.server", "https://"});
  expect_error(R"(
current-context: a
contexts: [{name: a, context: {cluster: c, user: u}}]
clusters: [{name: c, cluster: {server: "https://x", certificate-authority-data: "%%%"}}]
users: [{name: u, user: {token: t}}]
)",
               {"certificate-authority-data", "not valid base64"});
  expect_error(R"(
current-context: a
contexts: [{name: a, context: {cluster: c, user: u}}]
clusters: [{name: c, cluster: {server: "https://x"}}]
users: [{name: u, user: {client-certificate: /nonexistent/cert.pem, client-key: /nonexistent/key.pem}}]
)",
               {"users[name=u].user.client-certificate", "cannot read file /nonexistent/cert.pem"});
  expect_error(R"(
current-context: a
contexts: [{name: a, context: {cluster: c, user: missing}}]
clusters: [{name: c, cluster: {server: "https://x"}}]
users: [{name: u, user: {token: t}}]
)",
               {"contexts[name=a].context.user", "names user \"missing\""});
  expect_error(R"(
current-context: a
contexts: [{name: a, context: {cluster: c, user: u}}]
clusters: [{name: c, cluster: {server: "https://x"}}]
users: [{name: u, user: {exec: {command: aws}}}]
)",
               {"users[name=u].user", "exec"});
}

// Found by tests/fuzz/kubeconfig_fuzz: a list entry that is not a map made
// yaml-cpp throw BadSubscript (not a config error) out of parse_kubeconfig.
TEST_F(KubeconfigTest, ListEntriesThatAreNotMapsAreConfigErrors) {
  expect_error("current-context: a\ncontexts: [just-a-name]\n",
               {"contexts", "every entry must be a map"});
  expect_error(R"(
current-context: a
contexts: [{name: a, context: {cluster: c, user: u}}]
clusters: [{name: c, cluster: {server: "https://h"}}]
users: [[u]]
)",
               {"users", "every entry must be a map"});
}

TEST_F(KubeconfigTest, MissingFileNamesIt) {
  const std::string path = (dir_ / "nope").string();
  const Result<ClusterConfig> loaded = load_kubeconfig_file(path);
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.error().kind, ErrorKind::kConfig);
  EXPECT_EQ(loaded.error().describe(), "kubeconfig " + path + ": cannot read the file");
}

// The whole message, as an operator's log shows it: the file, the key's path
// and what is wrong with it.
TEST_F(KubeconfigTest, AKeyOfTheWrongTypeNamesTheFileTheKeyAndTheProblem) {
  const Result<ClusterConfig> parsed = parse_kubeconfig(R"(
current-context: a
contexts: [{name: a, context: {cluster: c}}]
clusters: [{name: c, cluster: {server: [https://x]}}]
)",
                                                        "/etc/k/config");
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.error().describe(),
            "kubeconfig /etc/k/config: clusters[name=c].cluster.server: must be a string");
}

TEST_F(KubeconfigTest, BadYamlNamesTheLineAndColumn) {
  const Result<ClusterConfig> parsed =
      parse_kubeconfig("current-context: a\nclusters:\n- {name: c\n", "/etc/k/config");
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.error().kind, ErrorKind::kConfig);
  const std::string what = parsed.error().describe();
  EXPECT_EQ(what.rfind("kubeconfig /etc/k/config: not valid YAML at line 4, column 1: ", 0), 0u)
      << what;
}

TEST_F(KubeconfigTest, InlineDataThatIsNotBase64NamesTheKeyAndTheOffset) {
  const Result<ClusterConfig> parsed = parse_kubeconfig(R"(
current-context: a
contexts: [{name: a, context: {cluster: c}}]
clusters: [{name: c, cluster: {server: "https://x", certificate-authority-data: "QUJD$"}}]
)",
                                                        "/etc/k/config");
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.error().describe(),
            "kubeconfig /etc/k/config: clusters[name=c].cluster.certificate-authority-data: is "
            "not valid base64 (unexpected character at offset 4)");
}

TEST_F(KubeconfigTest, AnUnreadableServiceAccountFileNamesIt) {
  fs::create_directories(dir_ / "sa");
  EnvLookup env = [](const std::string& name) -> std::optional<std::string> {
    if (name == "KUBERNETES_SERVICE_HOST") return "10.0.0.1";
    if (name == "KUBERNETES_SERVICE_PORT") return "443";
    return std::nullopt;
  };
  const std::string sa = (dir_ / "sa").string();
  Result<ClusterConfig> loaded = load_in_cluster(env, sa);
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.error().describe(),
            "in-cluster config: cannot read service-account token " + sa + "/token");
  write("sa/token", "t");
  loaded = load_in_cluster(env, sa);
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.error().describe(),
            "in-cluster config: cannot read service-account CA " + sa + "/ca.crt");
}

TEST_F(KubeconfigTest, NoConfigurationAnywhereSaysWhatWasTried) {
  EnvLookup none = [](const std::string&) -> std::optional<std::string> { return std::nullopt; };
  const Result<ClusterConfig> loaded = load_default("", "", none);
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.error().kind, ErrorKind::kConfig);
  EXPECT_EQ(loaded.error().describe(),
            "no Kubernetes configuration: no --kubeconfig, $KUBECONFIG or ~/.kube/config, and "
            "in-cluster config: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be set");
}

TEST_F(KubeconfigTest, KubeconfigEnvTakesFirstOfList) {
  auto path = write("config", kTwoContexts);
  EnvLookup env = [&](const std::string& name) -> std::optional<std::string> {
    if (name == "KUBECONFIG") return path + ":/other/file";
    return std::nullopt;
  };
  EXPECT_EQ(load_default("", "", env).or_throw().server, "https://10.1.2.3:6443");
}

TEST_F(KubeconfigTest, InClusterBracketsIpv6AndReadsServiceAccount) {
  fs::create_directories(dir_ / "sa");
  write("sa/token", "sa-token-1\n");
  write("sa/ca.crt", "SA-CA");
  write("sa/namespace", "agents");
  EnvLookup env = [](const std::string& name) -> std::optional<std::string> {
    if (name == "KUBERNETES_SERVICE_HOST") return "fd00::10";
    if (name == "KUBERNETES_SERVICE_PORT") return "443";
    return std::nullopt;
  };
  ClusterConfig c = load_in_cluster(env, (dir_ / "sa").string()).or_throw();
  EXPECT_EQ(c.server, "https://[fd00::10]:443");
  EXPECT_EQ(c.default_namespace, "agents");
  EXPECT_EQ(c.tls.ca_file, (dir_ / "sa/ca.crt").string());

  EnvLookup v4 = [](const std::string& name) -> std::optional<std::string> {
    if (name == "KUBERNETES_SERVICE_HOST") return "10.0.0.1";
    if (name == "KUBERNETES_SERVICE_PORT") return "6443";
    return std::nullopt;
  };
  EXPECT_EQ(load_in_cluster(v4, (dir_ / "sa").string()).or_throw().server, "https://10.0.0.1:6443");
}

TEST_F(KubeconfigTest, InClusterWithoutEnvSaysWhichVariables) {
  EnvLookup none = [](const std::string&) -> std::optional<std::string> { return std::nullopt; };
  const Result<ClusterConfig> loaded = load_in_cluster(none, (dir_ / "sa").string());
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.error().describe(),
            "in-cluster config: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be set");
}

TEST_F(KubeconfigTest, TokenFileRereadEverySixtySecondsAndAfterInvalidate) {
  ClusterConfig c;
  c.token_file = write("rotating", "one");
  auto now = std::chrono::steady_clock::time_point{};
  TokenSource tokens(c, [&] { return now; });
  EXPECT_EQ(tokens.token(), "one");
  write("rotating", "two");
  now += std::chrono::seconds(59);
  EXPECT_EQ(tokens.token(), "one");  // cached within the interval
  now += std::chrono::seconds(1);
  EXPECT_EQ(tokens.token(), "two");  // re-read at 60 s
  write("rotating", "three");
  tokens.invalidate();  // as after a 401
  EXPECT_EQ(tokens.token(), "three");
}

TEST(Base64, RoundTrip) {
  for (std::string s : {"", "a", "ab", "abc", "abcd", "hello world\n"}) {
    EXPECT_EQ(base64_decode(base64_encode(s)).value(), s);
  }
}

// The offset only: the text may be a secret, its characters stay out of logs.
TEST(Base64, ACharacterOutsideTheAlphabetIsAnErrorNamingItsOffset) {
  const Result<std::string> decoded = base64_decode("ab$d");
  ASSERT_FALSE(decoded.ok());
  EXPECT_EQ(decoded.error().kind, ErrorKind::kMalformed);
  EXPECT_EQ(decoded.error().describe(), "not base64: unexpected character at offset 2");
  EXPECT_EQ(base64_decode("YW Jj\nZA==").value(), "abcd");                  // whitespace is skipped
  EXPECT_EQ(base64_decode("-_8=").value(), base64_decode("+/8=").value());  // URL-safe too
}

}  // namespace
}  // namespace hb::kube

#include "kube/yaml_json.h"

namespace hb::kube {
namespace {

TEST(YamlJson, ScalarsFollowTheCoreSchemaAndQuotedStaysString) {
  auto docs = yaml_documents_to_json(R"(
a: 1
b: -2.5e3
c: "3"
d: true
e: null
f: 1.2.3
g: .5
h: 'false'
---
---
x: [1, two]
)",
                                     "test.yaml")
                  .or_throw();
  ASSERT_EQ(docs.size(), 2u);
  EXPECT_EQ(docs[0]["a"], 1);
  EXPECT_EQ(docs[0]["b"], -2500.0);
  EXPECT_EQ(docs[0]["c"], "3");
  EXPECT_EQ(docs[0]["d"], true);
  EXPECT_TRUE(docs[0]["e"].is_null());
  EXPECT_EQ(docs[0]["f"], "1.2.3");
  EXPECT_EQ(docs[0]["g"], 0.5);
  EXPECT_EQ(docs[0]["h"], "false");
  EXPECT_EQ(docs[1]["x"], nlohmann::json::parse(R"([1,"two"])"));
}

TEST(YamlJson, ASyntaxErrorNamesTheSourceAndTheLine) {
  const auto docs = yaml_documents_to_json("a: 1\nb: [1,\nc: 2\n", "bad.yaml");
  ASSERT_FALSE(docs.ok());
  EXPECT_EQ(docs.error().kind, ErrorKind::kConfig);
  const std::string what = docs.error().describe();
  EXPECT_EQ(what.rfind("bad.yaml: not valid YAML at line 4: ", 0), 0u) << what;
}

TEST(YamlJson, AnUnreadableFileNamesIt) {
  const auto docs = yaml_file_to_json("/nonexistent/hb/manifest.yaml");
  ASSERT_FALSE(docs.ok());
  EXPECT_EQ(docs.error().describe(), "/nonexistent/hb/manifest.yaml: cannot read the file");
}

// A key JSON cannot hold: an Error with its line, not yaml-cpp's exception.
TEST(YamlJson, AMapKeyThatIsNotAScalarIsAnError) {
  const auto docs = yaml_documents_to_json("a: 1\n? [x, y]\n: 2\n", "keys.yaml");
  ASSERT_FALSE(docs.ok());
  const std::string what = docs.error().describe();
  EXPECT_EQ(what.rfind("keys.yaml: cannot be JSON at line 2: ", 0), 0u) << what;
}

// Beyond a double's or an int64's range a plain scalar stays its text
// (std::stod threw out of the parser on 1e999).
TEST(YamlJson, NumbersOutOfRangeStayText) {
  const auto docs =
      yaml_documents_to_json("big: 1e999\nhuge: 99999999999999999999\nplus: +7\n", "n.yaml")
          .or_throw();
  ASSERT_EQ(docs.size(), 1u);
  EXPECT_EQ(docs[0]["big"], "1e999");
  EXPECT_EQ(docs[0]["huge"], "99999999999999999999");
  EXPECT_EQ(docs[0]["plus"], 7);
}

}  // namespace
}  // namespace hb::kube
