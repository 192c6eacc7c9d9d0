// Result<T>: a value or an error message, for code paths where a failure is an
// ordinary outcome (bad input, a cursor from another query) and must never
// become an exception crossing into C code.
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace wallet {

struct Error {
    std::string message;
};

template <typename T>
class [[nodiscard]] Result {
public:
    Result(T value) : state_(std::move(value)) {}            // NOLINT: implicit by design
    Result(Error error) : state_(std::move(error)) {}        // NOLINT: implicit by design

    bool ok() const noexcept { return std::holds_alternative<T>(state_); }
    explicit operator bool() const noexcept { return ok(); }

    const T& value() const& { return std::get<T>(state_); }
    T& value() & { return std::get<T>(state_); }
    T&& value() && { return std::get<T>(std::move(state_)); }
    const T& operator*() const& { return value(); }
    const T* operator->() const { return &value(); }

    const std::string& error() const { return std::get<Error>(state_).message; }

private:
    std::variant<T, Error> state_;
};

inline Error make_error(std::string message) { return Error{std::move(message)}; }

}  // namespace wallet
