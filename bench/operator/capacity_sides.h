// Which side of the capacity benchmark's one thread is working: the
// operator (its informers, reconciles and client) or the harness (the
// in-memory API server, the node, the bench itself). The operator's CPU is
// thread CPU time inside a kOperator SideScope and outside the kHarness
// scopes nested in it; its heap is the live bytes allocated while it works
// (capacity_sides.cpp replaces operator new and delete for this binary).
#pragma once

#include <cstdint>

namespace hb::bench {

enum class Side : uint8_t { kHarness = 0, kOperator = 1 };

// Nanoseconds of CPU this thread has used.
int64_t thread_cpu_ns();

struct SideTotals {
  int64_t operator_cpu_ns = 0;  // CPU with the operator's side open
  int64_t live_bytes[2] = {};   // heap allocated by each side, still live
  int64_t peak_operator_bytes = 0;
};
SideTotals& side_totals();
// Starts a new peak of the operator's heap (at the window's start).
void reset_operator_peak();

// Work on one side: kOperator, the operator's (its CPU counted, nested
// harness scopes excepted); kHarness, the API server's answer inside an
// operator scope (its CPU and heap are not the operator's).
class SideScope {
 public:
  explicit SideScope(Side side);
  ~SideScope();
  SideScope(const SideScope&) = delete;
  SideScope& operator=(const SideScope&) = delete;

 private:
  Side side_, previous_;
  int64_t started_ns_;
};

}  // namespace hb::bench
