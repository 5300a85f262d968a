#include "kube/priority_token_bucket.h"

#include <algorithm>

#include "api/hb_assert.h"

namespace hb::kube {

PriorityTokenBucket::PriorityTokenBucket(double qps, int burst, TimePoint start)
    : qps_(qps), burst_(std::max(1, burst)), tokens_(burst_), tokens_at_(start) {
  HB_ASSERT(qps > 0);
}

PriorityTokenBucket::Ticket PriorityTokenBucket::enqueue(RequestPriority priority) {
  const Ticket ticket = next_ticket_++;
  waiters_.emplace(static_cast<uint8_t>(priority.cls), priority.order, ticket);
  return ticket;
}

bool PriorityTokenBucket::withdraw(Ticket ticket) {
  // A scan: the line holds one ticket per waiting thread (workers, informers).
  for (auto it = waiters_.begin(); it != waiters_.end(); ++it) {
    if (std::get<2>(*it) != ticket) continue;
    waiters_.erase(it);
    return true;
  }
  return false;
}

void PriorityTokenBucket::refill(TimePoint now) {
  if (now <= tokens_at_) return;  // a clock read before the last one adds nothing
  const double elapsed = std::chrono::duration<double>(now - tokens_at_).count();
  tokens_ = std::min(burst_, tokens_ + elapsed * qps_);
  tokens_at_ = now;
}

std::vector<PriorityTokenBucket::Ticket> PriorityTokenBucket::grant(TimePoint now) {
  refill(now);
  std::vector<Ticket> served;
  while (!waiters_.empty() && tokens_ >= 1.0) {
    tokens_ -= 1.0;
    served.push_back(std::get<2>(*waiters_.begin()));
    waiters_.erase(waiters_.begin());
  }
  return served;
}

std::optional<PriorityTokenBucket::TimePoint> PriorityTokenBucket::next_token_at() const {
  if (waiters_.empty()) return std::nullopt;
  if (tokens_ >= 1.0) return tokens_at_;
  const auto wait = std::chrono::duration<double>((1.0 - tokens_) / qps_);
  return tokens_at_ + std::chrono::ceil<std::chrono::nanoseconds>(wait);
}

}  // namespace hb::kube
