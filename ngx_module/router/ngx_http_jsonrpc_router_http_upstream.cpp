#include "ngx_http_jsonrpc_router_http_upstream.hpp"

#include <charconv>
#include <list>
#include <string>
#include <utility>
#include <vector>

#include "api_limits.hpp"
#include "jsonrpc_error.hpp"
#include "ngx_http_jsonrpc_router_stream.hpp"
#include "ngx_http_jsonrpc_router_worker.hpp"
#include "ngx_wallet_client.hpp"
#include "router_fair_queue.hpp"
#include "router_http.hpp"

namespace jsonrpc_router {

namespace {

class HttpUpstream;

class HttpConn final : public Stream {
public:
    HttpConn(HttpUpstream& upstream, ngx_log_t* log, std::size_t max_body)
        : Stream(log), upstream_(upstream), parser_(router::HttpMessageParser::Kind::Response, max_body),
          max_body_(max_body) {}
    void start(Call& call, std::string_view request, bool reused);
    // The connection lets go of its call (answered, failed or given up);
    // the call's client has one call fewer on this URL.
    Call* detach();
    std::list<std::unique_ptr<HttpConn>>::iterator self;

private:
    bool on_open() override { return true; }
    bool on_data(std::string_view data) override;
    bool on_closed(bool during_connect, const char* what) override;
    bool complete();

    HttpUpstream& upstream_;
    router::HttpMessageParser parser_;
    Call* call_ = nullptr;
    std::string client_;  // the call's client address (empty: the router's own poll)
    bool reused_ = false;
    bool got_bytes_ = false;
    std::size_t max_body_ = 0;
};

class HttpUpstream final : public Upstream {
public:
    HttpUpstream(const RouterInstance& instance, std::size_t target, std::size_t url)
        : instance_(instance), target_(instance.table.targets[target]), endpoint_(target_.urls[url]),
          addr_(instance.target_addrs[target][url]),
          head_("POST " + endpoint_.path + " HTTP/1.1\r\nHost: " + endpoint_.host_header +
                "\r\nContent-Type: application/json\r\nAccept: application/json\r\n") {}
    ~HttpUpstream() override = default;

    // At most jsonrpc_router_upstream_connections connections to the URL,
    // and a client address at most its share of them
    // (jsonrpc_router_upstream_client_share); then calls wait in a queue
    // (their own timeout runs) that serves the addresses in turn, and past
    // jsonrpc_router_upstream_queue of them a call fails at once (1500).
    void submit(Call& call) override {
        call.upstream = this;
        const std::string& client = call.exchange().client();
        if (!queue_.may_start(client) || (idle_.empty() && conns_.size() >= instance_.upstream_connections)) {
            if (queue_.size() >= instance_.upstream_queue) {
                call.upstream = nullptr;
                call.busy_later(std::to_string(conns_.size()) + " connections, " + std::to_string(queue_.size()) +
                                " calls waiting");
                return;
            }
            call.upstream_link = nullptr;
            call.queued = true;
            // A poll (no client) goes first: it must not wait behind the
            // clients' calls to learn the node's state.
            queue_.push(client, &call);
            return;
        }
        send(call);
    }

    void call_started(const std::string& client) { queue_.started(client); }
    void call_left(const std::string& client) { queue_.ended(client); }

    void cancel(Call& call) override {
        auto* conn = static_cast<HttpConn*>(call.upstream_link);
        call.upstream = nullptr;
        call.upstream_link = nullptr;
        if (conn == nullptr) {
            queue_.erase(call.exchange().client(), &call);  // still waiting for a connection
            return;
        }
        conn->detach();
        destroy(conn);  // an unfinished exchange leaves the connection unusable
    }

    void release(HttpConn* conn) {
        if (idle_.size() >= instance_.keepalive) {
            destroy(conn);
            return;
        }
        conn->park(instance_.keepalive_timeout);
        idle_.push_back(conn);
        pump();
    }

    void destroy(HttpConn* conn) {
        for (auto it = idle_.begin(); it != idle_.end(); ++it) {
            if (*it == conn) {
                idle_.erase(it);
                break;
            }
        }
        conns_.erase(conn->self);
        pump();
    }

private:
    // Sends waiting calls while a connection is free or may be opened.
    void pump() {
        if (pumping_) return;
        pumping_ = true;
        while (!queue_.empty() && (!idle_.empty() || conns_.size() < instance_.upstream_connections)) {
            auto next = queue_.pop();
            if (!next) break;  // the clients that wait are all at their share
            send(*next->second);
        }
        pumping_ = false;
    }

    void send(Call& call) {
        const bool pumping = std::exchange(pumping_, true);  // no queue work from inside
        send_now(call);
        pumping_ = pumping;
    }

    void send_now(Call& call) {
        call.upstream_id = Worker::get().next_upstream_id();
        // Built in a buffer that keeps its memory from one request to the
        // next, the body written in place after its length.
        const router::CallPlan& plan = call.plan();
        const std::size_t body_size = plan.upstream_body_size(call.upstream_id);
        std::string& request = request_;
        request.reserve(head_.size() + kClientHeaderBytes + body_size);
        request.assign(head_);
        if (const std::string& client = call.exchange().client(); !client.empty()) {
            // Who the call is for, to the target's own limits: a proxy's
            // X-Forwarded-For, and the token-proven header an API of this
            // nginx trusts without any setting (api_limits.hpp).
            request += "X-Forwarded-For: ";
            request += client;
            request += "\r\n";
            request += wallet::api::kRouterClientHeader;
            request += ": ";
            wallet::api::append_router_client_value(request, wallet::ngx::router_token(), client);
            request += "\r\n";
        }
        request += "Content-Length: ";
        char digits[24];
        request.append(digits, std::to_chars(digits, digits + sizeof digits, body_size).ptr);
        request += "\r\n\r\n";
        plan.append_upstream_body(request, call.upstream_id);
        // A write goes on a fresh connection: a kept-alive one the target
        // closed meanwhile could not be retried (the write may have arrived).
        const bool write = plan.write;
        while (!write && !idle_.empty()) {
            HttpConn* conn = idle_.back();
            idle_.pop_back();
            if (conn->is_open()) {
                conn->unpark();
                conn->start(call, request, true);
                return;
            }
            destroy(conn);
        }
        conns_.push_back(std::make_unique<HttpConn>(*this, ngx_cycle->log, instance_.max_response));
        HttpConn* conn = conns_.back().get();
        conn->self = std::prev(conns_.end());
        if (!conn->open(addr_, endpoint_.tls() ? instance_.ssl : nullptr, endpoint_.host, instance_.ssl_verify,
                        static_cast<ngx_msec_t>(target_.timeout_ms))) {
            const bool local = conn->failed_locally();
            destroy(conn);
            call.upstream = nullptr;
            if (local) {
                call.busy_later("no local connection (worker_connections, descriptors or ports exhausted)");
            } else {
                call.fail_later(jsonrpc::code::upstream_unavailable, "connect failed");
            }
            return;
        }
        conn->start(call, request, false);
    }

    const RouterInstance& instance_;
    const router::Target& target_;
    const router::Endpoint& endpoint_;
    const ngx_addr_t& addr_;
    std::list<std::unique_ptr<HttpConn>> conns_;
    std::vector<HttpConn*> idle_;
    // Calls waiting for a connection, and the calls in service per client.
    router::FairQueue<Call*> queue_{instance_.upstream_client_connections()};
    bool pumping_ = false;
    // The request line and header lines that every request to the URL starts with.
    const std::string head_;
    // The request being built; kClientHeaderBytes: room for a client's two
    // headers (its address and their token) and the Content-Length line.
    static constexpr std::size_t kClientHeaderBytes = 320;
    std::string request_;
};

void HttpConn::start(Call& call, std::string_view request, bool reused) {
    call_ = &call;
    call.upstream_link = this;
    client_ = call.exchange().client();
    upstream_.call_started(client_);
    reused_ = reused;
    got_bytes_ = false;
    parser_.reset();
    parser_.reuse_body(spare_answer());  // the body was taken by the last call
    write(request);
}

Call* HttpConn::detach() {
    Call* call = std::exchange(call_, nullptr);
    if (call == nullptr) return nullptr;
    call->upstream = nullptr;
    call->upstream_link = nullptr;
    upstream_.call_left(client_);
    return call;
}

bool HttpConn::on_data(std::string_view data) {
    got_bytes_ = true;
    if (call_ == nullptr) {
        upstream_.destroy(this);  // an answer nobody waits for: not reusable
        return false;
    }
    auto state = parser_.feed(data);
    if (state == router::HttpMessageParser::State::Incomplete) return true;
    if (state == router::HttpMessageParser::State::Error) {
        Call* call = detach();
        std::string reason = "bad HTTP response: " + parser_.error();
        upstream_.destroy(this);
        call->upstream_failed(jsonrpc::code::bad_upstream_response, reason);
        return false;
    }
    return complete();
}

bool HttpConn::complete() {
    Call* call = detach();
    int status = parser_.status();
    std::string body = parser_.take_body();
    bool reusable = parser_.keep_alive() && parser_.take_leftover().empty() && is_open();
    if (reusable) {
        upstream_.release(this);
    } else {
        upstream_.destroy(this);
    }
    call->upstream_replied(status, std::move(body));
    return false;
}

bool HttpConn::on_closed(bool during_connect, const char* what) {
    Call* call = call_;
    if (call == nullptr) {
        upstream_.destroy(this);
        return false;
    }
    if (parser_.finish() == router::HttpMessageParser::State::Complete) return complete();
    detach();
    // A kept-alive connection the target closed meanwhile: one fresh try
    // (never a write's: writes are not sent on reused connections).
    if (reused_ && !got_bytes_ && !call->retried && !call->plan().write) {
        call->retried = true;
        HttpUpstream& upstream = upstream_;
        upstream.destroy(this);
        upstream.submit(*call);
        return false;
    }
    int code = (during_connect || !got_bytes_) ? jsonrpc::code::upstream_unavailable : jsonrpc::code::bad_upstream_response;
    std::string reason = std::string(what) + (got_bytes_ ? " in the middle of a response" : "");
    upstream_.destroy(this);
    call->upstream_failed(code, reason);
    return false;
}

}  // namespace

std::unique_ptr<Upstream> make_http_upstream(const RouterInstance& instance, std::size_t target, std::size_t url) {
    return std::make_unique<HttpUpstream>(instance, target, url);
}

}  // namespace jsonrpc_router
