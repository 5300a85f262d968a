// The JSON accessors (kube/json_path.h) under the controllers' names: the
// parsers of the typed model read objects with them.
#pragma once

#include <type_traits>

#include "controllers/schedule/utc_time.h"
#include "kube/json_path.h"

namespace hb::controllers {

using Json = kube::Json;
using TimePoint = schedule::TimePoint;
static_assert(std::is_same_v<TimePoint, kube::TimePoint>);

using kube::annotation_at;
using kube::bool_at;
using kube::find_named;
using kube::find_path;
using kube::int_at;
using kube::name_of;
using kube::namespace_of;
using kube::namespace_of_key;
using kube::number_at;
using kube::object_key;
using kube::owned_by;
using kube::parse_rfc3339;
using kube::resource_version_number;
using kube::same_json;
using kube::saturating_int64;
using kube::string_array_at;
using kube::string_at;
using kube::string_view_at;
using kube::time_at;

}  // namespace hb::controllers
