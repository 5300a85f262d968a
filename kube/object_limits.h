// What no Kubernetes object the API server sends goes past, for the
// scanners that read its text before a JSON parser does.
#pragma once

namespace hb::kube {

// Objects and arrays nested deeper than this are not a Kubernetes object:
// text that goes deeper is refused before a parser sees it.
inline constexpr int kKubeObjectDepthMax = 128;

}  // namespace hb::kube
