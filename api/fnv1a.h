// FNV-1a, the one definition: tiny, and stable across platforms, compilers
// and releases, which the names and schedule spreads made from it need
// (std::hash promises neither). Not for anything an attacker must not steer.
#pragma once

#include <cstdint>
#include <string_view>

namespace hb::api {

inline constexpr uint32_t kFnv32OffsetBasis = 2166136261u;
inline constexpr uint32_t kFnv32Prime = 16777619u;
inline constexpr uint64_t kFnv64OffsetBasis = 14695981039346656037ull;
inline constexpr uint64_t kFnv64Prime = 1099511628211ull;

constexpr uint32_t fnv1a32(std::string_view text) {
  uint32_t hash = kFnv32OffsetBasis;
  for (const char c : text) hash = (hash ^ static_cast<unsigned char>(c)) * kFnv32Prime;
  return hash;
}

constexpr uint64_t fnv1a64(std::string_view text) {
  uint64_t hash = kFnv64OffsetBasis;
  for (const char c : text) hash = (hash ^ static_cast<unsigned char>(c)) * kFnv64Prime;
  return hash;
}

// The published test vectors (draft-eastlake-fnv).
static_assert(fnv1a32("") == 0x811c9dc5u && fnv1a32("a") == 0xe40c292cu);
static_assert(fnv1a64("") == 0xcbf29ce484222325ull && fnv1a64("a") == 0xaf63dc4c8601ec8cull);

}  // namespace hb::api
