// The hash that spreads a fleet: Jenkins-style H in cron fields and the
// interval spread both pick an agent's minute from it. It must never change
// (an agent keeps its slot across builds, platforms and operator versions),
// so it is defined here by formula, not taken from std::hash.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace hb::schedule {

// FNV-1a (64 bits) of `key`, mixed with `salt` through splitmix64's
// finalizer so that one key gives unrelated numbers for different salts
// (an agent's hashed minute and hour differ).
uint64_t stable_hash(std::string_view key, uint64_t salt);

// The key an Agent's hashed values come from.
std::string schedule_hash_key(std::string_view ns, std::string_view name);

}  // namespace hb::schedule
