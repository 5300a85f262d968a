#pragma once
// Assertions that stay on in every build. NDEBUG does not remove them: an
// invariant the simulation and the release binaries break must stop the
// process at once, with the place and the expression, not run on corrupted.
// Keep each check cheap (a comparison, a bounds test); never put a call with
// a side effect inside one.
//
//   HB_ASSERT(cond);
//   HB_ASSERT_MSG(cond, "what the caller promised");

#include <cstdio>
#include <cstdlib>

namespace hb {

[[noreturn]] inline void assertion_failed(const char* file, int line, const char* expression,
                                          const char* message) noexcept {
  std::fprintf(stderr, "%s:%d: assertion failed: %s%s%s\n", file, line, expression,
               message[0] != '\0' ? ": " : "", message);
  std::fflush(stderr);
  std::abort();
}

}  // namespace hb

#define HB_ASSERT(cond)                         \
  (__builtin_expect(static_cast<bool>(cond), 1) \
       ? static_cast<void>(0)                   \
       : ::hb::assertion_failed(__FILE__, __LINE__, #cond, ""))

#define HB_ASSERT_MSG(cond, message)            \
  (__builtin_expect(static_cast<bool>(cond), 1) \
       ? static_cast<void>(0)                   \
       : ::hb::assertion_failed(__FILE__, __LINE__, #cond, (message)))
