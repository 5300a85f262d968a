// Kubernetes' name rules, checked against std::regex running the CRD's own
// patterns (code someone else wrote), over hand-picked edge cases and
// random strings from the characters that matter.
#include "api/object_names.h"

#include <gtest/gtest.h>

#include <random>
#include <regex>

namespace hb::api {
namespace {

std::vector<std::string> samples() {
  std::vector<std::string> out = {"",     "a",   "a-b",        "-a",          "a-",     "a.b",
                                  "a..b", ".a",  "a.",         "a.-b",        "a-.b",   "A",
                                  "a_b",  "0",   "x.y.z",      "..",          ".",      "a b",
                                  "a/b",  "a:b", "app-memory", "caf\xc3\xa9", "a\r\nb", "a\0b"};
  out.push_back(std::string(63, 'a'));
  out.push_back(std::string(64, 'a'));
  out.push_back(std::string(253, 'a'));
  out.push_back(std::string(254, 'a'));
  std::mt19937 rng(7);
  const std::string alphabet = "ab0-._A/ \r";
  for (int i = 0; i < 20000; ++i) {
    std::string s(rng() % 9, 'a');
    for (char& c : s) c = alphabet[rng() % alphabet.size()];
    out.push_back(s);
  }
  return out;
}

bool regex_says(const std::regex& pattern, const std::string& value, std::size_t max_chars) {
  return value.size() <= max_chars && std::regex_match(value, pattern);
}

TEST(ObjectNames, TheRulesAgreeWithTheCrdPatterns) {
  const std::regex label{std::string(kDns1123LabelPattern)};
  const std::regex subdomain{std::string(kDns1123SubdomainPattern)};
  const std::regex config_key{std::string(kConfigKeyPattern)};
  for (const std::string& s : samples()) {
    EXPECT_EQ(is_dns1123_label(s), regex_says(label, s, kDns1123LabelCharsMax))
        << quote_untrusted(s);
    EXPECT_EQ(is_dns1123_subdomain(s), regex_says(subdomain, s, kDns1123SubdomainCharsMax))
        << quote_untrusted(s);
    const bool key = regex_says(config_key, s, kConfigKeyCharsMax) && s != "." && s != "..";
    EXPECT_EQ(is_config_key(s), key) << quote_untrusted(s);
  }
}

TEST(ObjectNames, AProblemNamesTheFieldAndTheRuleAndQuotesSafely) {
  const std::string smuggling = "x HTTP/1.1\r\nHost: a\r\n\r\nDELETE /api/v1/namespaces/victim";
  const std::optional<std::string> problem = name_problem(
      "spec.heartbeat.promptFrom.configMapKeyRef.name", smuggling, NameRule::kDns1123Subdomain);
  ASSERT_TRUE(problem);
  EXPECT_EQ(problem->rfind("spec.heartbeat.promptFrom.configMapKeyRef.name \"x HTTP/1.1\\x0d", 0),
            0u)
      << *problem;
  EXPECT_NE(problem->find("DNS-1123 subdomain"), std::string::npos);
  EXPECT_EQ(problem->find_first_of("\r\n"), std::string::npos);
  EXPECT_FALSE(name_problem("f", "prompt", NameRule::kDns1123Subdomain));
}

TEST(ObjectNames, QuotingIsBoundedAndPrintable) {
  const std::string quoted = quote_untrusted(std::string(1000, '\n'));
  EXPECT_LE(quoted.size(), kQuotedValueCharsMax + 8);
  EXPECT_EQ(quoted.substr(quoted.size() - 3), "...");
  for (char c : quote_untrusted("a\"b\\c\x01\xff")) {
    EXPECT_TRUE(c >= 0x20 && c < 0x7f && c != '"');
  }
}

}  // namespace
}  // namespace hb::api
