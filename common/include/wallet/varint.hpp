// Varints (7 bits a byte, low first) and zigzag signed values: the bytes of
// the stored balance states and runs (wallet/balance_state.hpp,
// wallet/balance_runs.hpp). Reading never goes past the bytes: a malformed
// input gives nullopt.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>

namespace wallet::varint {

inline void put(std::string& out, std::uint64_t value) {
    while (value >= 0x80) {
        out += static_cast<char>((value & 0x7f) | 0x80);
        value >>= 7;
    }
    out += static_cast<char>(value);
}

inline void put_signed(std::string& out, std::int64_t value) {
    put(out, (static_cast<std::uint64_t>(value) << 1) ^ static_cast<std::uint64_t>(value >> 63));  // zigzag
}

// False when the value is out of the int64 range the encoding keeps.
template <typename Wide>
bool put_wide(std::string& out, Wide value) {
    if (value > std::numeric_limits<std::int64_t>::max() || value < std::numeric_limits<std::int64_t>::min()) return false;
    put_signed(out, static_cast<std::int64_t>(value));
    return true;
}

inline void put_text(std::string& out, std::string_view text) {
    put(out, text.size());
    out += text;
}

class Reader {
public:
    explicit Reader(std::string_view bytes) : bytes_(bytes) {}
    std::optional<std::uint64_t> next() {
        std::uint64_t value = 0;
        for (int shift = 0; shift < 64; shift += 7) {
            if (at_ >= bytes_.size()) return std::nullopt;
            const auto byte = static_cast<unsigned char>(bytes_[at_++]);
            value |= static_cast<std::uint64_t>(byte & 0x7f) << shift;
            if ((byte & 0x80) == 0) return value;
        }
        return std::nullopt;
    }
    std::optional<std::int64_t> next_signed() {
        const auto v = next();
        if (!v) return std::nullopt;
        return static_cast<std::int64_t>((*v >> 1) ^ (~(*v & 1) + 1));
    }
    std::optional<std::string> text() {
        const auto size = next();
        if (!size || *size > bytes_.size() - at_) return std::nullopt;
        std::string out(bytes_.substr(at_, *size));
        at_ += *size;
        return out;
    }
    std::size_t left() const { return bytes_.size() - at_; }
    bool done() const { return at_ == bytes_.size(); }

private:
    std::string_view bytes_;
    std::size_t at_ = 0;
};

}  // namespace wallet::varint
