// Small, total accessors for Kubernetes objects held as JSON: a missing or
// mistyped field gives the fallback, never an exception, because objects in a
// cache may come from an older or newer schema.
#pragma once

#include <chrono>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/rfc3339.h"

namespace hb::kube {

using Json = nlohmann::json;
using TimePoint = std::chrono::system_clock::time_point;

// The value at a '/'-separated path ("metadata/name"), or nullptr.
const Json* find_path(const Json& object, std::string_view path);

std::string string_at(const Json& object, std::string_view path, std::string_view fallback = "");
// The same without a copy: the view points into `object` (or is `fallback`).
std::string_view string_view_at(const Json& object, std::string_view path,
                                std::string_view fallback = "");
// A double as int64, saturating at the ends (NaN is 0): a cast that cannot overflow.
int64_t saturating_int64(double value);
// Integers as int64; a float is truncated and an out-of-range value saturates.
// The strings of the array at `path` (other members skipped; none: empty).
std::vector<std::string> string_array_at(const Json& object, std::string_view path);
std::optional<int64_t> int_at(const Json& object, std::string_view path);
std::optional<double> number_at(const Json& object, std::string_view path);
bool bool_at(const Json& object, std::string_view path, bool fallback = false);
std::optional<TimePoint> time_at(const Json& object, std::string_view path);
// metadata.annotations[key] when it is a string, else empty; the view points
// into `object`. Not a find_path: an annotation's key has a '/' of its own.
std::string_view annotation_at(const Json& object, std::string_view key);

// Equal and written the same: like ==, but a float never equals an integer
// (1.0 and 1 print differently) and floats compare bit for bit.
bool same_json(const Json& a, const Json& b);

// RFC 3339 as Kubernetes writes it (api/rfc3339.h; the runner reads times
// with the same parser).
using api::parse_rfc3339;

// "ns/name" of a namespaced object.
std::string object_key(const Json& object);
std::string object_key(std::string_view ns, std::string_view name);
// The namespace part of a key "ns/name" (all of it when it has no '/').
std::string namespace_of_key(std::string_view key);
// metadata.name.
std::string name_of(const Json& object);
// metadata.namespace ("" for a cluster-scoped object or a non-string field).
std::string namespace_of(const Json& object);
// An ownerReference names this uid.
bool owned_by(const Json& object, std::string_view uid);
// The object of that metadata.name in `objects`, or null.
const Json* find_named(const std::vector<Json>& objects, std::string_view name);
Json* find_named(std::vector<Json>& objects, std::string_view name);

// Integer resourceVersion for ordering our own writes against the cache (etcd
// revisions; 0 when not a number).
int64_t resource_version_number(const Json& object);

}  // namespace hb::kube
