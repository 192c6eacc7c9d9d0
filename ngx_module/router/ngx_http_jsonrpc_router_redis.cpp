#include "ngx_http_jsonrpc_router_redis.hpp"

#include <hiredis/hiredis.h>

#include <algorithm>
#include <initializer_list>
#include <string_view>

#include "ngx_http_jsonrpc_router_metrics.hpp"
#include "wallet/handles.hpp"

namespace jsonrpc_router {

namespace {

std::string resp_command(std::initializer_list<std::string_view> args) {
    // Appended, not "*" + ...: GCC 12 -Wrestrict false positive at -O3 (bug 105329).
    std::string out(1, '*');
    out += std::to_string(args.size());
    out += "\r\n";
    for (std::string_view a : args) {
        out += '$';
        out += std::to_string(a.size());
        out += "\r\n";
        out += a;
        out += "\r\n";
    }
    return out;
}

}  // namespace

void RedisClient::ReaderDeleter::operator()(redisReader* r) const noexcept { redisReaderFree(r); }

RedisClient::RedisClient(const RouterInstance& instance, ngx_log_t* log) : Stream(log), instance_(instance) {}

RedisClient::~RedisClient() = default;

bool RedisClient::usable() {
    if (is_open()) return true;
    if (ngx_current_msec < retry_at_) return false;
    reader_.reset(redisReaderCreate());
    if (!reader_ || !open(instance_.redis_addr, nullptr, "", false, std::max<ngx_msec_t>(instance_.redis_timeout, 1000))) {
        back_off("connect failed");
        return false;
    }
    return true;
}

void RedisClient::get(Call& call, const std::string& key) {
    fifo_.push_back(&call);
    write(resp_command({"GET", key}));
}

void RedisClient::set(const std::string& key, const std::string& value, std::int64_t ttl) {
    fifo_.push_back(nullptr);
    write(ttl == 0 ? resp_command({"SET", key, value}) : resp_command({"SET", key, value, "EX", std::to_string(ttl)}));
}

void RedisClient::cancel(Call& call) {
    for (auto& pending : fifo_) {
        if (pending == &call) pending = nullptr;
    }
}

void RedisClient::trip() {
    ngx_log_error(NGX_LOG_WARN, log_, 0, "jsonrpc_router: Redis %s did not answer in time; serving uncached",
                  instance_.redis_name.c_str());
    close();
    back_off("timeout");
}

bool RedisClient::on_open() {
    if (down_) {
        ngx_log_error(NGX_LOG_NOTICE, log_, 0, "jsonrpc_router: Redis %s is back", instance_.redis_name.c_str());
        down_ = false;
    }
    return true;
}

bool RedisClient::on_data(std::string_view data) {
    if (redisReaderFeed(reader_.get(), data.data(), data.size()) != REDIS_OK) return fail("bad Redis reply");
    for (;;) {
        void* raw = nullptr;
        if (redisReaderGetReply(reader_.get(), &raw) != REDIS_OK) return fail("bad Redis reply");
        if (raw == nullptr) return true;
        wallet::RedisReplyPtr reply(static_cast<redisReply*>(raw));
        if (fifo_.empty()) return fail("unexpected Redis reply");
        Call* call = fifo_.front();
        fifo_.pop_front();
        if (call == nullptr) continue;
        call->waiting_cache = false;
        if (reply->type == REDIS_REPLY_STRING) {
            call->cache_answered(CacheSource::Redis, std::string_view(reply->str, reply->len));
        } else {
            call->cache_answered(CacheSource::None, {});
        }
        if (!is_open()) return false;
    }
}

bool RedisClient::on_closed(bool, const char* what) {
    back_off(what);
    return false;
}

void RedisClient::back_off(const char* what) {
    count_redis_error(instance_);
    if (!down_) {
        ngx_log_error(NGX_LOG_WARN, log_, 0, "jsonrpc_router: Redis %s unavailable (%s); serving uncached",
                      instance_.redis_name.c_str(), what);
        down_ = true;
    }
    retry_at_ = ngx_current_msec + instance_.redis_retry;
    // Every waiting lookup becomes a miss (fail-open).
    auto pending = std::move(fifo_);
    fifo_.clear();
    for (Call* call : pending) {
        if (call == nullptr) continue;
        call->waiting_cache = false;
        call->cache_answered(CacheSource::None, {});
    }
}

}  // namespace jsonrpc_router
