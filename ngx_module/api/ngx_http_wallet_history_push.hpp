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
// A fork's rewind (in the writers' notification, migration 0025) retracts
// what was sent of the removed blocks; irreversible_only subscriptions get
// events up to the store's irreversible block (migration 0027).
// docs/wallet-history-api.md, "Push", has the client's side.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
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
    // Queues one text message (a notification) to the client: `parts`,
    // one after the other (written straight into the connection's queue).
    virtual void send_text(std::span<const std::string_view> parts) = 0;
    void send_text(std::string_view text) { send_text(std::span<const std::string_view>(&text, 1)); }
    // Who the client is for the limits: the address the router's limits
    // and the API's name it by (ngx_wallet_client.hpp).
    virtual std::string_view address() const = 0;
    // Bytes queued to the client, not yet sent.
    virtual std::size_t queued_bytes() const = 0;
    // Call drained(*this) once the queue is down to half of Limits::max_output.
    virtual void notify_when_drained() = 0;
};

struct Limits {
    std::size_t subscriptions = 16;  // per connection
    std::int64_t accounts = 100;     // per subscription
    std::size_t max_output = 4 << 20;  // queued to a connection: a catch-up waits at half of it
};

// The answer to a push call of `client`; none when `message` is not one
// (it is routed as any other message).
std::optional<std::string> handle(Client& client, std::string_view message, const Limits& limits);
// The client's connection ends: its subscriptions end with it.
void forget(Client& client);
// The client's queue drained (Client::notify_when_drained): the catch-ups
// that waited for it go on.
void drained(Client& client);
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

// The HTTP API's limits applied to a subscribe of `client`: its rate
// (WALLET_API_RATE_RPS), then the in-flight cap (WALLET_API_MAX_INFLIGHT).
// Counted: a place under the cap is taken, given back with leave_inflight
// once the subscription's catch-up is read.
enum class Admission { Admitted, Counted, RateLimited, Busy };
Admission admit(std::string_view client);
void leave_inflight();

}  // namespace wallet::push
