#include "ngx_wallet_client.hpp"

#include <sys/random.h>

#include <array>
#include <string>

namespace wallet::ngx {

namespace {

std::string& token_storage() {
    static std::string token;
    return token;
}

}  // namespace

bool make_router_token() {
    std::string& token = token_storage();
    if (!token.empty()) return true;
    std::array<unsigned char, 16> bytes{};
    if (getrandom(bytes.data(), bytes.size(), 0) != static_cast<ssize_t>(bytes.size())) return false;
    static constexpr char kHex[] = "0123456789abcdef";
    for (unsigned char b : bytes) {
        token += kHex[b >> 4];
        token += kHex[b & 15];
    }
    return true;
}

std::string_view router_token() { return token_storage(); }

}  // namespace wallet::ngx
