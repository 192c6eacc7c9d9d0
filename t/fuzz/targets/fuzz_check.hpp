// What every fuzz target shares: the input as text, and a check that stops
// the run with a message (libFuzzer keeps the input as a crash artifact).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace fuzz {

inline std::string_view text(const std::uint8_t* data, std::size_t size) {
    return {reinterpret_cast<const char*>(data), size};
}

// A property the code documents does not hold for this input.
[[noreturn]] inline void violated(const char* property) {
    std::fprintf(stderr, "fuzz property violated: %s\n", property);
    std::abort();
}

inline void check(bool holds, const char* property) {
    if (!holds) violated(property);
}

}  // namespace fuzz
