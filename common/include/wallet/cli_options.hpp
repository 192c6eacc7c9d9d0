// Command-line options of the programs (`--name=N`).
#pragma once

#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>

namespace wallet {

// The positive integer of `arg` when it is `prefix` followed by one (for
// example "--step-blocks=" and "--step-blocks=100"); nullopt otherwise.
inline std::optional<std::int64_t> number_option(const std::string& arg, const std::string& prefix) {
    if (arg.rfind(prefix, 0) != 0) return std::nullopt;
    const std::string text = arg.substr(prefix.size());
    char* end = nullptr;
    const long long value = std::strtoll(text.c_str(), &end, 10);
    if (text.empty() || *end != '\0' || value < 1) return std::nullopt;
    return value;
}

}  // namespace wallet
