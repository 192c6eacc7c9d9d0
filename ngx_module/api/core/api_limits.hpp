// Per-client request limiting: who the client is (peer address, or the
// X-Forwarded-For entry written by the outermost trusted proxy), and a token
// bucket table that lives in memory shared by every nginx worker. The table
// takes no lock itself: the caller holds one around allow().
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace wallet::api {

// The client address used for limiting. With trust_proxy, the address is read
// `trusted_hops` entries from the right of X-Forwarded-For (the entries a
// client writes itself are further left and are never used); a header with
// fewer entries, or an entry that is not an IP address, falls back to the
// peer address.
std::string client_identity(std::string_view peer_address, std::string_view forwarded_for, bool trust_proxy,
                            std::int64_t trusted_hops);

// The JSON-RPC router of the same nginx names the client it forwards a call
// for in this header: "<token> <address>", the token being a secret made
// once by the nginx master (wallet::ngx::router_token). A client cannot
// forge it: the router writes its upstream requests itself, and the API
// ignores a value whose token does not match.
inline constexpr std::string_view kRouterClientHeader = "X-Wallet-Router-Client";

// The header's value for `address`; the same appended to `out`.
std::string router_client_value(std::string_view token, std::string_view address);
void append_router_client_value(std::string& out, std::string_view token, std::string_view address);

// The address of a router client header carrying `token`; empty when the
// header is absent, its token differs (compared in constant time), or its
// address is neither an IP address nor "unix:" (a router on a unix socket).
std::string router_client(std::string_view header, std::string_view token);

class RateLimitTable {
public:
    struct Slot {
        std::uint64_t key_high;
        std::uint64_t key_low;
        std::int64_t milli_tokens;
        std::uint64_t updated_ms;
    };

    // Memory for `slots` buckets (placed by the caller, e.g. in shared memory).
    static std::size_t bytes_for(std::size_t slots) { return slots * sizeof(Slot); }

    // `memory` must be zeroed on first use; it is not owned.
    RateLimitTable(void* memory, std::size_t slots) : slots_(static_cast<Slot*>(memory)), count_(slots) {}

    // Takes one token from the identity's bucket (rate per second, burst
    // tokens at most). A full bucket is the same as no bucket, so a slot is
    // reused when its bucket has refilled; when every candidate slot is busy,
    // the stalest one is taken.
    bool allow(std::string_view identity, std::uint64_t now_ms, std::int64_t rate, std::int64_t burst);

private:
    static constexpr std::size_t kProbe = 8;
    Slot* slots_;
    std::size_t count_;
};

}  // namespace wallet::api
