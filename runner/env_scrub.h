// The API key out of reach of /proc: unsetenv() only drops the pointer from
// `environ`; the kernel's /proc/PID/environ still shows the bytes of the
// environment block the process started with. take_secret_env
// overwrites them in place. With PR_SET_DUMPABLE 0 (main), the key then
// lives only in this process's heap.
#pragma once

#include <optional>
#include <string>

namespace hb::runner {

// Returns NAME's value and erases NAME from the environment, first
// overwriting the value's bytes where they are (in the initial block, that
// is what /proc/self/environ reads). nullopt when NAME is not set.
std::optional<std::string> take_secret_env(const char* name);

}  // namespace hb::runner
