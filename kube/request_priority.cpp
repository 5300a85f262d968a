#include "kube/request_priority.h"

namespace hb::kube {

namespace {
thread_local RequestPriority current_priority;
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

}  // namespace hb::kube
