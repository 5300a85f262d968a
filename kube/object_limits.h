// What no Kubernetes object the API server sends goes past, for the
// scanners that read its text before a JSON parser does.
#pragma once

#include <cstddef>

namespace hb::kube {

// Objects and arrays nested deeper than this are not a Kubernetes object:
// text that goes deeper is refused before a parser sees it.
inline constexpr int kKubeObjectDepthMax = 128;

// An object's JSON text longer than this is no object the API server
// stores (etcd takes 1.5 MiB per request by default; managedFields and
// JSON's escapes grow it, not tenfold).
inline constexpr std::size_t kKubeObjectBytesMax = 16 * 1024 * 1024;

}  // namespace hb::kube
