// A value, or the error that stands in its place: what an operation that can
// fail returns instead of throwing (std::expected arrives with C++23).
// [[nodiscard]]: a result dropped on the floor does not compile under -Werror.
#pragma once

#include <type_traits>
#include <utility>
#include <variant>

#include "api/hb_assert.h"

namespace hb {

template <class T, class E>
class [[nodiscard]] Expected {
 public:
  template <class U = T, class = std::enable_if_t<std::is_constructible_v<T, U&&> &&
                                                  !std::is_same_v<std::decay_t<U>, E> &&
                                                  !std::is_base_of_v<Expected, std::decay_t<U>>>>
  Expected(U&& value) : state_(std::in_place_index<0>, std::forward<U>(value)) {}  // NOLINT
  Expected(E error) : state_(std::in_place_index<1>, std::move(error)) {}  // NOLINT: implicit

  bool ok() const { return state_.index() == 0; }
  T& value() & {
    HB_ASSERT(ok());
    return std::get<0>(state_);
  }
  const T& value() const& {
    HB_ASSERT(ok());
    return std::get<0>(state_);
  }
  T&& value() && {
    HB_ASSERT(ok());
    return std::get<0>(std::move(state_));
  }
  const E& error() const& {
    HB_ASSERT(!ok());
    return std::get<1>(state_);
  }
  E&& error() && {
    HB_ASSERT(!ok());
    return std::get<1>(std::move(state_));
  }

 private:
  std::variant<T, E> state_;
};

}  // namespace hb
