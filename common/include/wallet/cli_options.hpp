// Command-line options of the programs (`--name=N`, `--help`, `--version`).
#pragma once

#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <string>
#include <string_view>

namespace wallet {

// The version --version prints (WALLET_PACKAGE_VERSION of the build, common/src/version.cpp.in).
const char* package_version();

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

// `--help` (or `-h`) and `--version`, which every program answers before
// reading its settings: help by print_help(), the version as "program X.Y.Z"
// on `out`. True when `arg` was one of them (the program then exits with
// status 0), false for any other argument.
template <typename PrintHelp>
bool answer_help_or_version(const std::string& arg, std::string_view program, PrintHelp&& print_help,
                            std::ostream& out = std::cout) {
    if (arg == "--help" || arg == "-h") {
        print_help();
        return true;
    }
    if (arg == "--version") {
        out << program << ' ' << package_version() << '\n';
        return true;
    }
    return false;
}

}  // namespace wallet
