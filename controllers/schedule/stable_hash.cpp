#include "controllers/schedule/stable_hash.h"

#include "api/fnv1a.h"

namespace hb::schedule {
namespace {

constexpr uint64_t kGoldenGamma = 0x9e3779b97f4a7c15ull;  // splitmix64's increment

}  // namespace

uint64_t stable_hash(std::string_view key, uint64_t salt) {
  // Odd multipliers make every step a bijection of 64-bit values: different
  // salts of one key never give the same hash.
  static_assert(kGoldenGamma % 2 == 1 && 0xbf58476d1ce4e5b9ull % 2 == 1 &&
                0x94d049bb133111ebull % 2 == 1);
  uint64_t h = api::fnv1a64(key);
  h += kGoldenGamma * (salt + 1);
  h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ull;
  h = (h ^ (h >> 27)) * 0x94d049bb133111ebull;
  return h ^ (h >> 31);
}

std::string schedule_hash_key(std::string_view ns, std::string_view name) {
  std::string key(ns);
  key += '/';
  key += name;
  return key;
}

}  // namespace hb::schedule
