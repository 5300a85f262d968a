#include "kube/request_priority.h"

namespace hb::kube {

namespace {
thread_local RequestPriority current_priority;
thread_local GiveWayTime current_give_way;
}  // namespace

RequestPriority current_request_priority() {
  return current_priority;
}

void set_current_request_priority(RequestPriority priority) {
  current_priority = priority;
}

RequestPriorityScope::RequestPriorityScope(RequestPriority priority) : previous_(current_priority) {
  current_priority = priority;
}

RequestPriorityScope::~RequestPriorityScope() {
  current_priority = previous_;
}

GiveWayTime current_give_way_time() {
  return current_give_way;
}

GiveWayScope::GiveWayScope(GiveWayTime at) : previous_(current_give_way) {
  current_give_way = at;
}

GiveWayScope::~GiveWayScope() {
  current_give_way = previous_;
}

}  // namespace hb::kube
