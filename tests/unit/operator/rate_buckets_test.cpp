// Token buckets by key (operator/rate_buckets.h) and the edge's request class.
#include "operator/rate_buckets.h"

#include <gtest/gtest.h>

#include "kube/priority_token_bucket.h"

namespace hb::operator_ {
namespace {

using namespace std::chrono_literals;
using Clock = KeyedBuckets::Clock;

TEST(KeyedBuckets, ABurstThenRetryAfterTheTimeToTheNextToken) {
  KeyedBuckets buckets({/*per_second=*/0.5, /*burst=*/3}, 100);
  const Clock::time_point t0{};
  for (int i = 0; i < 3; ++i) EXPECT_EQ(buckets.take("a", t0), std::nullopt) << i;
  EXPECT_EQ(buckets.take("a", t0), 2s);            // one token every 2 s
  EXPECT_EQ(buckets.take("b", t0), std::nullopt);  // another key has its own
  EXPECT_EQ(buckets.take("a", t0 + 1s), 1s);
  EXPECT_EQ(buckets.take("a", t0 + 2s), std::nullopt);
  EXPECT_EQ(buckets.take("a", t0 + 2s), 2s);
}

TEST(KeyedBuckets, RetryAfterIsAWholeSecondAtLeast) {
  KeyedBuckets fast({/*per_second=*/100, /*burst=*/1}, 10);
  const Clock::time_point t0{};
  EXPECT_EQ(fast.take("a", t0), std::nullopt);
  EXPECT_EQ(fast.take("a", t0), 1s);
}

TEST(KeyedBuckets, MemoryIsBoundedAndIdleBucketsAreDropped) {
  KeyedBuckets buckets({/*per_second=*/1, /*burst=*/2}, 50);
  const Clock::time_point t0{};
  for (int i = 0; i < 1000; ++i) buckets.take("k" + std::to_string(i), t0);
  EXPECT_EQ(buckets.size(), 50u);
  // Full again after 2 s: a later take sweeps them (the same as no bucket).
  buckets.take("fresh", t0 + 10s);
  EXPECT_EQ(buckets.size(), 1u);
}

TEST(KeyedBuckets, AnEvictedKeyIsForgivenNeverRefused) {
  KeyedBuckets buckets({/*per_second=*/0.001, /*burst=*/1}, 2);
  const Clock::time_point t0{};
  EXPECT_EQ(buckets.take("a", t0), std::nullopt);
  EXPECT_NE(buckets.take("a", t0), std::nullopt);
  buckets.take("b", t0);
  buckets.take("c", t0);  // "a" is the least recently used: forgotten
  EXPECT_EQ(buckets.take("a", t0), std::nullopt);
}

// The edge's API calls (wakeup, metrics reviews) wait behind every class of
// the agents' own writes, bookkeeping included.
TEST(RequestClass, EdgeRequestsAreServedAfterBookkeeping) {
  kube::PriorityTokenBucket bucket(1, 1, {});
  bucket.enqueue({kube::RequestClass::kDispatch, 0});  // takes the one token
  const auto edge = bucket.enqueue({kube::RequestClass::kEdge, 0});
  const auto bookkeeping = bucket.enqueue({kube::RequestClass::kBookkeeping, 0});
  bucket.grant({});
  const auto next = bucket.grant(kube::PriorityTokenBucket::TimePoint{} + 1s);
  ASSERT_EQ(next.size(), 1u);
  EXPECT_EQ(next[0], bookkeeping);
  const auto last = bucket.grant(kube::PriorityTokenBucket::TimePoint{} + 2s);
  ASSERT_EQ(last.size(), 1u);
  EXPECT_EQ(last[0], edge);
  EXPECT_EQ(kube::request_class_name(kube::RequestClass::kEdge), "edge");
}

}  // namespace
}  // namespace hb::operator_
