#include "controllers/model/managed_namespaces.h"

#include <algorithm>

namespace hb::controllers {

std::string namespace_refusal(std::string_view ns, std::string_view own_namespace) {
  static_assert(kSystemNamespaces.size() == 3, "the refusal below names each of them");
  const std::string name(ns);
  if (std::find(kSystemNamespaces.begin(), kSystemNamespaces.end(), ns) !=
      kSystemNamespaces.end()) {
    return "namespace " + name +
           " belongs to Kubernetes; the operator never manages kube-system, kube-public or "
           "kube-node-lease";
  }
  if (!own_namespace.empty() && ns == own_namespace) {
    return "namespace " + name +
           " is the operator's own (its ServiceAccount, leader Lease and wakeup Secret); the "
           "operator never manages the namespace it runs in";
  }
  return std::string();
}

}  // namespace hb::controllers
