#include "thin_response.hpp"

#include <optional>
#include <string_view>

#include "wallet/decoder.hpp"

namespace wallet::backfill {
namespace {

// Index of the quote closing the string that opens at `open`, or nullopt.
std::optional<std::size_t> string_end(std::string_view text, std::size_t open) {
    for (std::size_t i = open + 1; i < text.size(); ++i) {
        if (text[i] == '\\') {
            ++i;
        } else if (text[i] == '"') {
            return i;
        }
    }
    return std::nullopt;
}

std::size_t skip_space(std::string_view text, std::size_t i) {
    while (i < text.size() && (text[i] == ' ' || text[i] == '\t' || text[i] == '\n' || text[i] == '\r')) ++i;
    return i;
}

// Index of the brace closing the object that opens at `open`, or nullopt.
std::optional<std::size_t> object_end(std::string_view text, std::size_t open) {
    int depth = 0;
    for (std::size_t i = open; i < text.size(); ++i) {
        const char c = text[i];
        if (c == '"') {
            auto end = string_end(text, i);
            if (!end) return std::nullopt;
            i = *end;
        } else if (c == '{' || c == '[') {
            ++depth;
        } else if (c == '}' || c == ']') {
            if (--depth == 0) return c == '}' ? std::optional<std::size_t>(i) : std::nullopt;
        }
    }
    return std::nullopt;
}

// At `key_end` (the closing quote of an "op" key): the span of the body
// object of ["type", {...}] when the type is not a wallet operation.
std::optional<std::pair<std::size_t, std::size_t>> droppable_body(std::string_view text, std::size_t key_end) {
    std::size_t i = skip_space(text, key_end + 1);
    if (i >= text.size() || text[i] != ':') return std::nullopt;
    i = skip_space(text, i + 1);
    if (i >= text.size() || text[i] != '[') return std::nullopt;
    i = skip_space(text, i + 1);
    if (i >= text.size() || text[i] != '"') return std::nullopt;
    const auto type_end = string_end(text, i);
    if (!type_end) return std::nullopt;
    const std::string_view type = text.substr(i + 1, *type_end - i - 1);
    // An escaped name is left to the decoder as it is.
    if (type.find('\\') != std::string_view::npos || is_wallet_operation(type)) return std::nullopt;
    i = skip_space(text, *type_end + 1);
    if (i >= text.size() || text[i] != ',') return std::nullopt;
    i = skip_space(text, i + 1);
    if (i >= text.size() || text[i] != '{') return std::nullopt;
    const auto end = object_end(text, i);
    if (!end) return std::nullopt;
    return std::pair(i, *end);
}

}  // namespace

void thin_non_wallet_operations(std::string& body) {
    const std::string_view text = body;
    std::string out;
    std::size_t copied = 0;
    for (std::size_t i = text.find('"'); i != std::string_view::npos; i = text.find('"', i + 1)) {
        const auto end = string_end(text, i);
        if (!end) return;  // not JSON: left for the parser to refuse
        if (text.substr(i + 1, *end - i - 1) == "op") {
            if (const auto span = droppable_body(text, *end)) {
                if (out.empty()) out.reserve(text.size() / 2);
                out.append(text, copied, span->first - copied);
                out += "{}";
                copied = span->second + 1;
                i = span->second;
                continue;  // the next string starts after the dropped body
            }
        }
        i = *end;
    }
    if (copied == 0) return;
    out.append(text, copied, std::string_view::npos);
    body = std::move(out);
}

}  // namespace wallet::backfill
