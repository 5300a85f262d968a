#include "kube/backoff.h"

#include <gtest/gtest.h>

namespace hb::kube {
namespace {

using std::chrono::milliseconds;

TEST(Backoff, DoublesWithJitterUpToMaxAndResets) {
  Backoff b(kWatchBackoffInitial, kWatchBackoffMax, 0.2, /*seed=*/42);
  auto first = b.next();
  EXPECT_GE(first, milliseconds(640));
  EXPECT_LE(first, milliseconds(960));
  milliseconds last{0};
  for (int i = 0; i < 20; ++i) last = b.next();
  EXPECT_LE(last, kWatchBackoffMax);
  EXPECT_GE(last, milliseconds(24000));  // saturated near the cap
  b.reset();
  EXPECT_LE(b.next(), milliseconds(960));
}

TEST(Backoff, JitterSpreadsClients) {
  Backoff a(kWatchBackoffInitial, kWatchBackoffMax, 0.2, 1);
  Backoff b(kWatchBackoffInitial, kWatchBackoffMax, 0.2, 2);
  int differ = 0;
  for (int i = 0; i < 5; ++i) differ += a.next() != b.next();
  EXPECT_GT(differ, 0);
}

}  // namespace
}  // namespace hb::kube
