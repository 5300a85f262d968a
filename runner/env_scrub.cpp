#include "runner/env_scrub.h"

#include <cstdlib>
#include <cstring>

extern char** environ;

namespace hb::runner {

std::optional<std::string> take_secret_env(const char* name) {
  const std::size_t name_length = std::strlen(name);
  std::optional<std::string> value;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    char* item = *entry;
    if (std::strncmp(item, name, name_length) != 0 || item[name_length] != '=') continue;
    char* text = item + name_length + 1;
    if (!value) value = std::string(text);
    // volatile: the compiler may not drop a store to memory it thinks is dead.
    for (volatile char* p = text; *p != '\0'; ++p) *p = 'x';
  }
  ::unsetenv(name);
  return value;
}

}  // namespace hb::runner
