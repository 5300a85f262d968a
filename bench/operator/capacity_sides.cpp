#include "bench/operator/capacity_sides.h"

#include <time.h>

#include <cstdlib>
#include <new>

namespace hb::bench {

namespace {

// The side allocations are charged to; one thread does all the work.
Side g_side = Side::kHarness;
// Each block carries its size and side ahead of it (16 bytes keep the
// alignment operator new promises).
constexpr std::size_t kHeader = 16;

struct Header {
  int64_t size;
  int64_t side;
};

void* allocate(std::size_t size) {
  void* raw = std::malloc(size + kHeader);
  if (raw == nullptr) throw std::bad_alloc();
  auto* header = static_cast<Header*>(raw);
  header->size = static_cast<int64_t>(size);
  header->side = static_cast<int64_t>(g_side);
  SideTotals& t = side_totals();
  t.live_bytes[header->side] += header->size;
  if (g_side == Side::kOperator && t.live_bytes[1] > t.peak_operator_bytes) {
    t.peak_operator_bytes = t.live_bytes[1];
  }
  return static_cast<char*>(raw) + kHeader;
}

void release(void* p) noexcept {
  if (p == nullptr) return;
  auto* header = reinterpret_cast<Header*>(static_cast<char*>(p) - kHeader);
  side_totals().live_bytes[header->side] -= header->size;
  std::free(header);
}

}  // namespace

int64_t thread_cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

SideTotals& side_totals() {
  static SideTotals totals;  // trivially destructible: safe in the last delete
  return totals;
}

void reset_operator_peak() {
  side_totals().peak_operator_bytes = side_totals().live_bytes[1];
}

SideScope::SideScope(Side side) : side_(side), previous_(g_side), started_ns_(thread_cpu_ns()) {
  g_side = side;
}

SideScope::~SideScope() {
  const int64_t spent = thread_cpu_ns() - started_ns_;
  if (side_ == Side::kOperator) side_totals().operator_cpu_ns += spent;
  // The server's answer inside an operator scope is not the operator's.
  if (side_ == Side::kHarness && previous_ == Side::kOperator) {
    side_totals().operator_cpu_ns -= spent;
  }
  g_side = previous_;
}

}  // namespace hb::bench

void* operator new(std::size_t size) {
  return hb::bench::allocate(size);
}
void* operator new[](std::size_t size) {
  return hb::bench::allocate(size);
}
void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
  try {
    return hb::bench::allocate(size);
  } catch (...) {
    return nullptr;
  }
}
void* operator new[](std::size_t size, const std::nothrow_t&) noexcept {
  try {
    return hb::bench::allocate(size);
  } catch (...) {
    return nullptr;
  }
}
void operator delete(void* p) noexcept {
  hb::bench::release(p);
}
void operator delete[](void* p) noexcept {
  hb::bench::release(p);
}
void operator delete(void* p, std::size_t) noexcept {
  hb::bench::release(p);
}
void operator delete[](void* p, std::size_t) noexcept {
  hb::bench::release(p);
}
void operator delete(void* p, const std::nothrow_t&) noexcept {
  hb::bench::release(p);
}
void operator delete[](void* p, const std::nothrow_t&) noexcept {
  hb::bench::release(p);
}
