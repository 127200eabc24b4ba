// queen/core/result.hpp — Result<T>: a value or a queen::Error, with the std::expected interface.
#pragma once

#include <optional>
#include <type_traits>
#include <utility>
#include <variant>

#include "queen/core/assert.hpp"
#include "queen/core/error.hpp"

namespace queen {

/// Holds either a T or an Error. Mirrors std::expected<T, Error> so it can become that later.
/// Accessing value() of an error (or error() of a value) is a programmer error and asserts.
template <class T>
class [[nodiscard]] Result {
public:
    using value_type = T;

    Result() requires std::is_default_constructible_v<T> : storage_(std::in_place_index<0>) {}
    Result(const T& value) : storage_(std::in_place_index<0>, value) {}        // NOLINT implicit
    Result(T&& value) : storage_(std::in_place_index<0>, std::move(value)) {}  // NOLINT implicit
    template <class U>
    requires(std::is_constructible_v<T, U&&> && !std::is_same_v<std::decay_t<U>, T> &&
             !std::is_same_v<std::decay_t<U>, Error> && !std::is_same_v<std::decay_t<U>, Result<T>>)
        Result(U&& value)
        : storage_(std::in_place_index<0>, std::forward<U>(value)) {}            // NOLINT
    Result(Error error) : storage_(std::in_place_index<1>, std::move(error)) {}  // NOLINT implicit

    [[nodiscard]] bool has_value() const noexcept { return storage_.index() == 0; }
    explicit operator bool() const noexcept { return has_value(); }

    [[nodiscard]] T& value() & {
        QUEEN_ASSERT(has_value(), "Result::value() on an error: ", error_unchecked().message());
        return std::get<0>(storage_);
    }
    [[nodiscard]] const T& value() const& {
        QUEEN_ASSERT(has_value(), "Result::value() on an error: ", error_unchecked().message());
        return std::get<0>(storage_);
    }
    [[nodiscard]] T&& value() && {
        QUEEN_ASSERT(has_value(), "Result::value() on an error: ", error_unchecked().message());
        return std::get<0>(std::move(storage_));
    }
    [[nodiscard]] const Error& error() const& {
        QUEEN_ASSERT(!has_value(), "Result::error() on a value");
        return std::get<1>(storage_);
    }
    [[nodiscard]] Error&& error() && {
        QUEEN_ASSERT(!has_value(), "Result::error() on a value");
        return std::get<1>(std::move(storage_));
    }
    T& operator*() & { return value(); }
    const T& operator*() const& { return value(); }
    T* operator->() { return &value(); }
    const T* operator->() const { return &value(); }

    template <class U>
    [[nodiscard]] T value_or(U&& fallback) const& {
        return has_value() ? std::get<0>(storage_) : static_cast<T>(std::forward<U>(fallback));
    }

private:
    const Error& error_unchecked() const {
        static const Error none{};
        return storage_.index() == 1 ? std::get<1>(storage_) : none;
    }
    std::variant<T, Error> storage_;
};

/// Result<void>: success or an Error.
template <>
class [[nodiscard]] Result<void> {
public:
    using value_type = void;
    Result() = default;
    Result(Error error) : error_(std::move(error)) {}  // NOLINT implicit

    [[nodiscard]] bool has_value() const noexcept { return !error_.has_value(); }
    explicit operator bool() const noexcept { return has_value(); }
    void value() const {
        QUEEN_ASSERT(has_value(), "Result<void>::value() on an error: ", error_->message());
    }
    [[nodiscard]] const Error& error() const& {
        QUEEN_ASSERT(!has_value(), "Result::error() on a value");
        return *error_;
    }
    [[nodiscard]] Error&& error() && {
        QUEEN_ASSERT(!has_value(), "Result::error() on a value");
        return std::move(*error_);
    }

private:
    std::optional<Error> error_;
};

using Status = Result<void>;

}  // namespace queen

#define QUEEN_CONCAT_INNER(a, b) a##b
#define QUEEN_CONCAT(a, b) QUEEN_CONCAT_INNER(a, b)

/// QUEEN_TRY(expr) returns the error of a failed Result<void>/Result<T> from the enclosing
/// function. QUEEN_TRY(decl, expr) also binds the value: QUEEN_TRY(auto n, parse(x));
#define QUEEN_TRY_1(expr)                                \
    do {                                                 \
        auto&& queen_try_result_ = (expr);               \
        if (!queen_try_result_) {                        \
            return std::move(queen_try_result_).error(); \
        }                                                \
    } while (false)
#define QUEEN_TRY_2_IMPL(tmp, decl, expr) \
    auto tmp = (expr);                    \
    if (!tmp) {                           \
        return std::move(tmp).error();    \
    }                                     \
    decl = std::move(tmp).value()
#define QUEEN_TRY_2(decl, expr) QUEEN_TRY_2_IMPL(QUEEN_CONCAT(queen_try_, __LINE__), decl, expr)
#define QUEEN_TRY_SELECT(_1, _2, name, ...) name
#define QUEEN_TRY(...) QUEEN_TRY_SELECT(__VA_ARGS__, QUEEN_TRY_2, QUEEN_TRY_1, unused)(__VA_ARGS__)
