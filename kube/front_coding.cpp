#include "kube/front_coding.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace hb::kube {

namespace {

[[noreturn]] void front_coding_corrupt() {
  std::fputs("heartbeat-operator: a front-coded record does not decode (a bug)\n", stderr);
  std::abort();
}

std::size_t shared_prefix(std::string_view a, std::string_view b) {
  const std::size_t most = std::min(a.size(), b.size());
  std::size_t n = 0;
  while (n < most && a[n] == b[n]) ++n;
  return n;
}

}  // namespace

void put_varint(std::string& out, uint64_t value) {
  while (value >= 0x80) {
    out.push_back(static_cast<char>((value & 0x7f) | 0x80));
    value >>= 7;
  }
  out.push_back(static_cast<char>(value));
}

uint64_t get_varint(const char*& at, const char* end) {
  uint64_t value = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (at == end) front_coding_corrupt();
    const auto byte = static_cast<uint8_t>(*at++);
    value |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) return value;
  }
  front_coding_corrupt();
}

std::string_view take_bytes(const char*& at, const char* end, uint64_t bytes) {
  if (static_cast<uint64_t>(end - at) < bytes) front_coding_corrupt();
  std::string_view out(at, bytes);
  at += bytes;
  return out;
}

void put_front_coded(std::string& out, std::string_view previous, std::string_view key) {
  const std::size_t shared = shared_prefix(previous, key);
  put_varint(out, shared);
  put_varint(out, key.size() - shared);
  out.append(key.substr(shared));
}

void get_front_coded(const char*& at, const char* end, std::string& key) {
  const uint64_t shared = get_varint(at, end);
  if (shared > key.size()) front_coding_corrupt();
  key.resize(shared);
  key.append(take_bytes(at, end, get_varint(at, end)));
}

void FrontCodedKeys::push_back(std::string_view key) {
  put_front_coded(bytes_, last_, key);
  last_.assign(key);
  ++size_;
}

bool FrontCodedKeys::Cursor::next() {
  if (at_ == end_) return false;
  get_front_coded(at_, end_, key_);
  return true;
}

}  // namespace hb::kube
