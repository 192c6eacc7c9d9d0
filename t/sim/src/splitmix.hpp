// splitmix64, the simulator's one mixing function: block contents, ids, fork
// salts and fault decisions all derive from it, so that two processes given
// the same seeds serve the same bytes.
#pragma once

#include <cstdint>

namespace sim {

inline constexpr std::uint64_t kSplitmixIncrement = 0x9e3779b97f4a7c15ULL;

// The output of a splitmix64 generator whose state is x before the step.
constexpr std::uint64_t splitmix64(std::uint64_t x) noexcept {
    x += kSplitmixIncrement;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

}  // namespace sim
