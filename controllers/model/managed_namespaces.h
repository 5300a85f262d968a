// The namespaces the operator never manages, whatever it is told: those of
// Kubernetes itself (kube-system holds the control plane's leader Leases and
// ConfigMaps) and the one the operator runs in (its ServiceAccount, leader
// Lease and wakeup Secret). An Agent there would have the operator make
// ServiceAccounts, Roles and Jobs beside them. Pure.
#pragma once

#include <array>
#include <string>
#include <string_view>

namespace hb::controllers {

inline constexpr std::array<std::string_view, 3> kSystemNamespaces = {"kube-system", "kube-public",
                                                                      "kube-node-lease"};

// "" when the operator may manage `ns`; otherwise why not, in a sentence
// that names the namespace (for a start error, a log line, an Event).
// `own_namespace`: where the operator runs ("" when unknown).
std::string namespace_refusal(std::string_view ns, std::string_view own_namespace);

}  // namespace hb::controllers
