// The router's Redis connection (one per routing table and worker): a
// pipelined socket nginx owns; hiredis only decodes the replies. Fail-open:
// while Redis is down or slow every lookup is a miss.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <string>

#include "ngx_http_jsonrpc_router_exchange.hpp"
#include "ngx_http_jsonrpc_router_stream.hpp"

struct redisReader;

namespace jsonrpc_router {

class RedisClient final : public Stream {
public:
    RedisClient(const RouterInstance& instance, ngx_log_t* log);
    ~RedisClient() override;

    // False when Redis is known to be down (back-off running) or cannot be reached.
    bool usable();
    // Looks `key` up; the reply reaches call.cache_answered.
    void get(Call& call, const std::string& key);
    // ttl 0: without expiry.
    void set(const std::string& key, const std::string& value, std::int64_t ttl);
    // The call went away: its reply is read and dropped.
    void cancel(Call& call);
    // A lookup timed out: Redis is slow or gone; skip it for a while.
    void trip();

private:
    bool on_open() override;
    bool on_data(std::string_view data) override;
    bool on_closed(bool, const char* what) override;
    void back_off(const char* what);

    struct ReaderDeleter {
        void operator()(redisReader* r) const noexcept;
    };

    const RouterInstance& instance_;
    std::unique_ptr<redisReader, ReaderDeleter> reader_;
    std::deque<Call*> fifo_;
    ngx_msec_t retry_at_ = 0;
    bool down_ = false;
};

}  // namespace jsonrpc_router
