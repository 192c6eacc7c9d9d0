// Push (issue 29): wallet_history.subscribe and wallet_history.unsubscribe
// on the router's WebSocket endpoint, served by the wallet_history API of
// the same nginx (its settings, pool and cursor secret).
//
// Each worker with subscribers keeps one extra database connection that
// LISTENs on the writers' channel (migration 0025). On a notification the
// worker runs one statement for all its live subscriptions: the events of
// their accounts above the lowest position any of them delivered, oldest
// first (api_sql.hpp, wh_push), and hands each subscription the events of
// its accounts and filter above its own position, so every event reaches a
// subscription once and in the store's keyset order. A subscription with a
// cursor first reads the stored events after it in pages of its own, then
// joins the live ones; without one it starts after the highest stored block.
// docs/wallet-history-api.md, "Push", has the client's side.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace wallet {
class CursorCodec;
namespace api {
struct RequestLimits;
struct PushCounters;
enum class PushDrop : std::size_t;
}
namespace ngx {
class PgPool;
struct PgPoolSettings;
}
}  // namespace wallet

namespace wallet::push {

// A WebSocket connection holding subscriptions (the router's session).
class Client {
public:
    virtual ~Client() = default;
    // Queues one text message (a notification) to the client.
    virtual void send_text(std::string text) = 0;
};

struct Limits {
    std::size_t subscriptions = 16;  // per connection
    std::int64_t accounts = 100;     // per subscription
};

// The answer to a push call of `client`; none when `message` is not one
// (it is routed as any other message).
std::optional<std::string> handle(Client& client, std::string_view message, const Limits& limits);
// The client's connection ends: its subscriptions end with it.
void forget(Client& client);
// The worker exits: every subscription and the listener's connection end.
void shutdown();
// The server closes `client`'s connection for `reason`: counted in the
// metrics when it holds subscriptions.
void dropped(const Client& client, api::PushDrop reason);

// What the API module of this worker lends push (ngx_http_wallet_history_module.cpp):
// none when this nginx serves no wallet_history API.
struct ApiContext {
    ngx::PgPool* pool = nullptr;
    const ngx::PgPoolSettings* pool_settings = nullptr;
    const CursorCodec* cursors = nullptr;
    const api::RequestLimits* limits = nullptr;
    api::PushCounters* counters = nullptr;  // in the API's shared memory zone
};
std::optional<ApiContext> api_context();

}  // namespace wallet::push
