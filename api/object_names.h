// Kubernetes' rules for the names the operator sends in a URL or puts in a
// reference: one definition for the operator, the client and the runner.
// A name from a spec, a run or a wakeup is checked against its kind's rule
// where it enters; anything that fails never reaches a request. Pure.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace hb::api {

// apimachinery's validation.DNS1123LabelMaxLength / DNS1123SubdomainMaxLength.
inline constexpr std::size_t kDns1123LabelCharsMax = 63;
inline constexpr std::size_t kDns1123SubdomainCharsMax = 253;
// A ConfigMap's or Secret's data key (validation.IsConfigMapKey).
inline constexpr std::size_t kConfigKeyCharsMax = 253;
// How much of a refused value an error message quotes.
inline constexpr std::size_t kQuotedValueCharsMax = 64;

// The CRD schema's patterns for the same rules (crds/*.yaml repeat them;
// tests/unit/api/object_names_test.cpp checks the two agree).
inline constexpr std::string_view kDns1123LabelPattern = "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$";
inline constexpr std::string_view kDns1123SubdomainPattern =
    "^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$";
inline constexpr std::string_view kConfigKeyPattern = "^[-._a-zA-Z0-9]+$";

// Namespaces, Jobs, label values of names: lowercase alphanumerics and '-',
// starting and ending alphanumeric, at most 63.
bool is_dns1123_label(std::string_view name);
// Most object names (ConfigMap, Secret, PVC, ServiceAccount, custom
// resources): dot-separated DNS-1123 labels, at most 253 in all.
bool is_dns1123_subdomain(std::string_view name);
// Alphanumerics, '-', '_' and '.', not "." or "..", at most 253.
bool is_config_key(std::string_view key);

enum class NameRule { kDns1123Label, kDns1123Subdomain, kConfigKey };

bool name_follows(NameRule rule, std::string_view value);
// "a DNS-1123 subdomain (lowercase letters, digits, '-' and '.', ...)".
std::string describe_rule(NameRule rule);
// `field "value": must be <rule>`, the value quoted safely; nullopt when it
// follows the rule.
std::optional<std::string> name_problem(std::string_view field, std::string_view value,
                                        NameRule rule);

// Attacker bytes made fit for a message, a log line or an Event: at most
// kQuotedValueCharsMax bytes, every byte outside printable ASCII (and '"',
// '\\') written as \xNN, "..." when cut. Never contains CR, LF or a quote.
std::string quote_untrusted(std::string_view value);

}  // namespace hb::api
