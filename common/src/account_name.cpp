#include "wallet/account_name.hpp"

namespace wallet {
namespace {

constexpr std::size_t kMinSegmentLength = 3;

bool is_lower(char c) { return c >= 'a' && c <= 'z'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

bool is_valid_segment(std::string_view segment) {
    if (segment.size() < kMinSegmentLength) return false;
    if (!is_lower(segment.front())) return false;
    if (!is_lower(segment.back()) && !is_digit(segment.back())) return false;
    char previous = '\0';
    for (const char c : segment) {
        if (!is_lower(c) && !is_digit(c) && c != '-') return false;
        if (c == '-' && previous == '-') return false;
        previous = c;
    }
    return true;
}

}  // namespace

bool is_valid_account_name(std::string_view name) noexcept {
    if (name.size() < kMinAccountNameLength || name.size() > kMaxAccountNameLength) return false;
    while (true) {
        const auto dot = name.find('.');
        if (!is_valid_segment(name.substr(0, dot))) return false;
        if (dot == std::string_view::npos) return true;
        name.remove_prefix(dot + 1);
    }
}

}  // namespace wallet
