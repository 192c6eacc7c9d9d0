#include "json_writer.hpp"

#include <algorithm>
#include <array>
#include <cstdio>

#include "wallet/json_util.hpp"

namespace sim {

void OutputBuffer::reserve(std::size_t capacity) {
    if (capacity <= capacity_) return;
    std::size_t grown = std::max(capacity, capacity_ * 2 + 4096);
    std::unique_ptr<char[]> bigger(new char[grown]);  // deliberately not zero-filled
    if (size_ > 0) std::memcpy(bigger.get(), data_.get(), size_);
    data_ = std::move(bigger);
    capacity_ = grown;
}

void JsonWriter::string(std::string_view text) {
    reserve(wallet::json::quoted_capacity(text.size()));
    char* begin = out_.data() + out_.size();
    char* end = wallet::json::write_quoted(begin, text);
    out_.resize(out_.size() + static_cast<std::size_t>(end - begin));
}

void JsonWriter::decimal(std::string_view digits, int precision) {
    auto places = static_cast<std::size_t>(precision);
    reserve(digits.size() + places + 3);
    char* begin = out_.data() + out_.size();
    char* at = begin;
    if (!digits.empty() && digits.front() == '-') {
        *at++ = '-';
        digits.remove_prefix(1);
    }
    if (digits.size() <= places) {
        *at++ = '0';
        if (places > 0) {
            *at++ = '.';
            std::memset(at, '0', places - digits.size());
            at += places - digits.size();
            std::memcpy(at, digits.data(), digits.size());
            at += digits.size();
        }
    } else {
        std::size_t whole = digits.size() - places;
        std::memcpy(at, digits.data(), whole);
        at += whole;
        if (places > 0) {
            *at++ = '.';
            std::memcpy(at, digits.data() + whole, places);
            at += places;
        }
    }
    out_.resize(out_.size() + static_cast<std::size_t>(at - begin));
}

void JsonWriter::decimal(std::int64_t amount, int precision) {
    char digits[24];
    auto end = std::to_chars(digits, digits + sizeof digits, amount).ptr;
    decimal(std::string_view(digits, static_cast<std::size_t>(end - digits)), precision);
}

void write_hex(char* out, std::uint64_t value, int digits) {
    // Two characters per byte from a table; an odd leading nibble alone.
    static const auto kPairs = [] {
        std::array<char, 512> pairs{};
        constexpr char kHex[] = "0123456789abcdef";
        for (std::size_t byte = 0; byte < 256; ++byte) {
            pairs[2 * byte] = kHex[byte >> 4];
            pairs[2 * byte + 1] = kHex[byte & 15];
        }
        return pairs;
    }();
    if (digits % 2 != 0) {
        *out++ = "0123456789abcdef"[(value >> (4 * (digits - 1))) & 15];
        --digits;
    }
    for (int i = digits / 2 - 1; i >= 0; --i) {
        std::size_t byte = (value >> (8 * i)) & 0xff;
        *out++ = kPairs[2 * byte];
        *out++ = kPairs[2 * byte + 1];
    }
}

void JsonWriter::hex(std::uint64_t value, int digits) {
    reserve(static_cast<std::size_t>(digits));
    write_hex(out_.data() + out_.size(), value, digits);
    out_.resize(out_.size() + static_cast<std::size_t>(digits));
}

std::string escaped(std::string_view text) {
    OutputBuffer buffer;
    JsonWriter out(buffer);
    out.string(text);
    return buffer.str();
}

void JsonWriter::json(const json_t* value) {
    switch (json_typeof(value)) {
        case JSON_OBJECT: {
            put('{');
            const char* key;
            json_t* member;
            bool first = true;
            // json_object_foreach takes a non-const object; iteration does not modify it.
            json_t* object = const_cast<json_t*>(value);
            json_object_foreach(object, key, member) {
                if (!first) put(',');
                first = false;
                string(key);
                put(':');
                json(member);
            }
            put('}');
            break;
        }
        case JSON_ARRAY: {
            put('[');
            for (std::size_t i = 0; i < json_array_size(value); ++i) {
                if (i > 0) put(',');
                json(json_array_get(value, i));
            }
            put(']');
            break;
        }
        case JSON_STRING: string(std::string_view(json_string_value(value), json_string_length(value))); break;
        case JSON_INTEGER: integer(json_integer_value(value)); break;
        case JSON_REAL: {
            char text[32];
            int n = std::snprintf(text, sizeof text, "%.17g", json_real_value(value));
            raw(std::string_view(text, static_cast<std::size_t>(n)));
            break;
        }
        case JSON_TRUE: raw("true"); break;
        case JSON_FALSE: raw("false"); break;
        case JSON_NULL: raw("null"); break;
    }
}

json_t* parse_json(std::string_view text, json_error_t* error) {
    // Find integer literals outside strings with 19 or more digits; only
    // those can overflow int64.
    auto big_integers = [&](auto&& on_literal) {
        bool in_string = false;
        for (std::size_t i = 0; i < text.size(); ++i) {
            char c = text[i];
            if (in_string) {
                if (c == '\\')
                    ++i;
                else if (c == '"')
                    in_string = false;
                continue;
            }
            if (c == '"') {
                in_string = true;
                continue;
            }
            if ((c >= '0' && c <= '9') || c == '-') {
                std::size_t end = i + 1;
                while (end < text.size() && text[end] >= '0' && text[end] <= '9') ++end;
                bool integer = end == text.size() || (text[end] != '.' && text[end] != 'e' && text[end] != 'E');
                std::size_t digits = end - i - (c == '-' ? 1 : 0);
                if (integer && digits >= 19) on_literal(i, end);
                i = end - 1;
            }
        }
    };
    bool any = false;
    big_integers([&](std::size_t, std::size_t) { any = true; });
    if (!any) return json_loadb(text.data(), text.size(), JSON_DECODE_ANY, error);

    std::string rewritten;
    rewritten.reserve(text.size() + 16);
    std::size_t copied = 0;
    big_integers([&](std::size_t begin, std::size_t end) {
        std::string_view literal = text.substr(begin, end - begin);
        long long value = 0;
        auto [stop, failure] = std::from_chars(literal.data(), literal.data() + literal.size(), value);
        if (failure == std::errc() && stop == literal.data() + literal.size()) return;  // fits int64
        rewritten.append(text.substr(copied, begin - copied));
        rewritten.push_back('"');
        rewritten.append(literal);
        rewritten.push_back('"');
        copied = end;
    });
    rewritten.append(text.substr(copied));
    return json_loadb(rewritten.data(), rewritten.size(), JSON_DECODE_ANY, error);
}

}  // namespace sim
