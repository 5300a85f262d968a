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
  ClusterConfig c = load_kubeconfig_file(path);
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
  ClusterConfig c = load_kubeconfig_file(path, "prod");
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
  ClusterConfig c = load_kubeconfig_file(path);
  EXPECT_TRUE(c.tls.insecure_skip_verify);
  EXPECT_EQ(c.token_file, (dir_ / "token").string());
  TokenSource tokens(c);
  EXPECT_EQ(tokens.token(), "tok-from-file");
}

void expect_error(const std::string& text, const std::vector<std::string>& needles,
                  const std::string& path = "/etc/k/config", const std::string& context = "") {
  try {
    parse_kubeconfig(text, path, context);
    FAIL() << "expected ConfigError for:\n" << text;
  } catch (const ConfigError& e) {
    std::string what = e.what();
    for (const auto& needle : needles) {
      EXPECT_NE(what.find(needle), std::string::npos)
          << "message \"" << what << "\" lacks \"" << needle << "\"";
    }
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
// yaml-cpp throw BadSubscript (not a ConfigError) out of parse_kubeconfig.
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
  try {
    load_kubeconfig_file((dir_ / "nope").string());
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("nope: cannot read"), std::string::npos);
  }
}

TEST_F(KubeconfigTest, KubeconfigEnvTakesFirstOfList) {
  auto path = write("config", kTwoContexts);
  EnvLookup env = [&](const std::string& name) -> std::optional<std::string> {
    if (name == "KUBECONFIG") return path + ":/other/file";
    return std::nullopt;
  };
  EXPECT_EQ(load_default("", "", env).server, "https://10.1.2.3:6443");
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
  ClusterConfig c = load_in_cluster(env, (dir_ / "sa").string());
  EXPECT_EQ(c.server, "https://[fd00::10]:443");
  EXPECT_EQ(c.default_namespace, "agents");
  EXPECT_EQ(c.tls.ca_file, (dir_ / "sa/ca.crt").string());

  EnvLookup v4 = [](const std::string& name) -> std::optional<std::string> {
    if (name == "KUBERNETES_SERVICE_HOST") return "10.0.0.1";
    if (name == "KUBERNETES_SERVICE_PORT") return "6443";
    return std::nullopt;
  };
  EXPECT_EQ(load_in_cluster(v4, (dir_ / "sa").string()).server, "https://10.0.0.1:6443");
}

TEST_F(KubeconfigTest, InClusterWithoutEnvSaysWhichVariables) {
  EnvLookup none = [](const std::string&) -> std::optional<std::string> { return std::nullopt; };
  try {
    load_in_cluster(none, (dir_ / "sa").string());
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("KUBERNETES_SERVICE_HOST"), std::string::npos);
  }
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
    EXPECT_EQ(base64_decode(base64_encode(s)), s);
  }
  EXPECT_THROW(base64_decode("ab$d"), std::invalid_argument);
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
                                     "test.yaml");
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
  EXPECT_THROW(yaml_documents_to_json("a: [", "bad.yaml"), std::runtime_error);
}

}  // namespace
}  // namespace hb::kube
