#include "ngx_http_jsonrpc_router_ws_upstream.hpp"

#include <algorithm>
#include <string>
#include <unordered_map>
#include <vector>

#include "jsonrpc_error.hpp"
#include "ngx_http_jsonrpc_router_stream.hpp"
#include "ngx_http_jsonrpc_router_worker.hpp"
#include "router_http.hpp"
#include "router_websocket.hpp"

namespace jsonrpc_router {

namespace {

class WsUpstream;

class WsConn final : public Stream {
public:
    WsConn(WsUpstream& upstream, ngx_log_t* log, std::size_t max_message)
        : Stream(log), upstream_(upstream), max_message_(max_message),
          decoder_(router::ws::Decoder::Role::Client, max_message) {}

    void send(Call& call, std::uint64_t id, const std::string& body);
    void forget(std::uint64_t id) { pending_.erase(id); }
    std::size_t load() const { return pending_.size(); }
    bool start(const ngx_addr_t& addr, const router::Endpoint& endpoint, std::int64_t timeout_ms,
               const RouterInstance& instance);

private:
    bool on_open() override;
    bool on_data(std::string_view data) override;
    bool on_closed(bool during_connect, const char* what) override;
    bool on_event(router::ws::Event& event);
    void fail_all(int code, const std::string& reason);

    WsUpstream& upstream_;
    std::size_t max_message_;
    enum class State { Closed, Handshake, Open } state_ = State::Closed;
    router::HttpMessageParser handshake_{router::HttpMessageParser::Kind::Response, 0};
    router::ws::Decoder decoder_;
    std::string key_;
    std::string path_;
    std::string host_header_;
    std::string queued_;  // frames waiting for the handshake
    std::unordered_map<std::uint64_t, Call*> pending_;
};

class WsUpstream final : public Upstream {
public:
    WsUpstream(const RouterInstance& instance, std::size_t target, std::size_t url)
        : instance_(instance), target_(instance.table.targets[target]), endpoint_(target_.urls[url]),
          addr_(instance.target_addrs[target][url]) {}

    void submit(Call& call) override {
        if (conns_.empty()) {
            for (std::size_t i = 0; i < std::max<std::size_t>(1, instance_.ws_upstream_connections); ++i) {
                conns_.push_back(std::make_unique<WsConn>(*this, ngx_cycle->log, instance_.max_response));
            }
        }
        // The least busy connection; a closed one is reopened.
        WsConn* best = nullptr;
        for (auto& conn : conns_) {
            if (best == nullptr || conn->load() < best->load()) best = conn.get();
        }
        call.upstream = this;
        call.upstream_link = best;
        call.upstream_id = Worker::get().next_upstream_id();
        if (!best->is_open() && !best->start(addr_, endpoint_, target_.timeout_ms, instance_)) {
            call.upstream = nullptr;
            call.upstream_link = nullptr;
            if (best->failed_locally()) {
                call.busy_later("no local connection (worker_connections, descriptors or ports exhausted)");
            } else {
                call.fail_later(jsonrpc::code::upstream_unavailable, "connect failed");
            }
            return;
        }
        best->send(call, call.upstream_id, call.plan().upstream_body(call.upstream_id));
    }

    void cancel(Call& call) override {
        auto* conn = static_cast<WsConn*>(call.upstream_link);
        call.upstream = nullptr;
        call.upstream_link = nullptr;
        if (conn != nullptr) conn->forget(call.upstream_id);  // a late answer is dropped
    }

private:
    const RouterInstance& instance_;
    const router::Target& target_;
    const router::Endpoint& endpoint_;
    const ngx_addr_t& addr_;
    std::vector<std::unique_ptr<WsConn>> conns_;
};

bool WsConn::start(const ngx_addr_t& addr, const router::Endpoint& endpoint, std::int64_t timeout_ms,
                   const RouterInstance& instance) {
    state_ = State::Handshake;
    handshake_ = router::HttpMessageParser(router::HttpMessageParser::Kind::Response, 0);
    decoder_ = router::ws::Decoder(router::ws::Decoder::Role::Client, max_message_);
    queued_.clear();
    key_ = router::ws::make_client_key();
    path_ = endpoint.path;
    host_header_ = endpoint.host_header;
    if (!open(addr, endpoint.tls() ? instance.ssl : nullptr, endpoint.host, instance.ssl_verify,
              static_cast<ngx_msec_t>(timeout_ms))) {
        state_ = State::Closed;
        return false;
    }
    return true;
}

void WsConn::send(Call& call, std::uint64_t id, const std::string& body) {
    pending_[id] = &call;
    std::string frame = router::ws::encode_frame(router::ws::Opcode::Text, body, true);
    if (state_ == State::Open) {
        write(frame);
    } else {
        queued_ += frame;
    }
}

bool WsConn::on_open() {
    std::string request = "GET " + path_ + " HTTP/1.1\r\nHost: " + host_header_ +
                          "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"
                          "Sec-WebSocket-Key: " + key_ + "\r\n\r\n";
    write(request);
    return true;
}

bool WsConn::on_data(std::string_view data) {
    if (state_ == State::Handshake) {
        auto s = handshake_.feed(data);
        if (s == router::HttpMessageParser::State::Incomplete) return true;
        auto accept = handshake_.header("sec-websocket-accept");
        if (s == router::HttpMessageParser::State::Error || handshake_.status() != 101 || !accept ||
            *accept != router::ws::accept_key(key_)) {
            close();
            fail_all(jsonrpc::code::upstream_unavailable, "WebSocket handshake refused");
            return false;
        }
        state_ = State::Open;
        connection()->idle = 1;  // closed, not waited for, on a graceful worker shutdown
        write(queued_);
        queued_.clear();
        std::string rest = handshake_.take_leftover();
        if (rest.empty()) return true;
        decoder_.feed(rest);
    } else {
        decoder_.feed(data);
    }
    router::ws::Event event;
    for (;;) {
        auto status = decoder_.next(event);
        if (status == router::ws::Decoder::Status::NeedMore) return true;
        if (status == router::ws::Decoder::Status::Error) {
            ngx_log_error(NGX_LOG_ERR, log_, 0, "jsonrpc_router: bad frame from a WebSocket target: %s", decoder_.error().c_str());
            close();
            fail_all(jsonrpc::code::bad_upstream_response, "bad WebSocket frame");
            return false;
        }
        if (!on_event(event)) return false;
    }
}

bool WsConn::on_event(router::ws::Event& event) {
    using Kind = router::ws::Event::Kind;
    switch (event.kind) {
        case Kind::Ping:
            write(router::ws::encode_frame(router::ws::Opcode::Pong, event.payload, true));
            return true;
        case Kind::Pong:
            return true;
        case Kind::Close:
            close();
            fail_all(jsonrpc::code::upstream_unavailable, "target closed the WebSocket");
            return false;
        case Kind::Message: {
            auto id = router::reply_upstream_id(event.payload);
            if (!id) {
                // Not attributable to one call on a multiplexed connection:
                // every call waiting on it fails, and it is reopened later.
                ngx_log_error(NGX_LOG_ERR, log_, 0, "jsonrpc_router: WebSocket target sent an answer without a request id");
                close();
                fail_all(jsonrpc::code::bad_upstream_response, "answer without a request id");
                return false;
            }
            auto it = pending_.find(*id);
            if (it == pending_.end()) {
                ngx_log_error(NGX_LOG_INFO, log_, 0, "jsonrpc_router: late WebSocket answer dropped");
                return true;
            }
            Call* call = it->second;
            pending_.erase(it);
            call->upstream = nullptr;
            call->upstream_link = nullptr;
            call->upstream_replied(200, std::move(event.payload));
            return is_open();
        }
    }
    return true;
}

bool WsConn::on_closed(bool during_connect, const char* what) {
    state_ = State::Closed;
    fail_all(jsonrpc::code::upstream_unavailable, during_connect ? std::string("connect failed") : std::string(what));
    return false;
}

void WsConn::fail_all(int code, const std::string& reason) {
    state_ = State::Closed;
    auto pending = std::move(pending_);
    pending_.clear();
    queued_.clear();
    for (auto& [id, call] : pending) {
        call->upstream = nullptr;
        call->upstream_link = nullptr;
        call->upstream_failed(code, reason);
    }
}

}  // namespace

std::unique_ptr<Upstream> make_ws_upstream(const RouterInstance& instance, std::size_t target, std::size_t url) {
    return std::make_unique<WsUpstream>(instance, target, url);
}

}  // namespace jsonrpc_router
