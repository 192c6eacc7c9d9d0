// HTTP POST clients of the router: one Exchange per request body, answered
// with the X-JSONRPC-* headers; and the JSON-RPC errors sent before any
// routing (bad method, too large).
#include <memory>
#include <new>
#include <string>

#include "jsonrpc_writer.hpp"
#include "ngx_http_jsonrpc_router_conf.hpp"
#include "ngx_http_jsonrpc_router_worker.hpp"
#include "ngx_wallet_client.hpp"
#include "ngx_wallet_guard.hpp"
#include "ngx_wallet_shared.hpp"

using jsonrpc_router::Exchange;
using jsonrpc_router::ExchangeOwner;
using jsonrpc_router::RouterInstance;

namespace {

// The record of the request's client: the one its connection is counted on.
jsonrpc_router::ClientHold hold_client(ngx_http_request_t* r, const RouterInstance& instance) {
    if (const jsonrpc_router::ClientHold* counted = ngx_http_jsonrpc_router_connection_client(r)) return counted->share();
    return {jsonrpc_router::Worker::get().clients(), wallet::ngx::client_address(r), ngx_current_msec,
            instance.client_rate};
}

class HttpJob final : public ExchangeOwner {
public:
    HttpJob(ngx_http_request_t* r, const RouterInstance& instance)
        : r_(r), instance_(instance), client_(hold_client(r, instance)),
          exchange_(instance, r->connection->log, *this, router::ClientTransport::Http, client_.get()) {
        rate_timer_.handler = wallet::ngx::guarded<"jsonrpc_router: client rate", on_rate_timer, fail_rate_timer>;
        rate_timer_.data = this;
        rate_timer_.log = r->connection->log;
        rate_timer_.cancelable = 1;  // a graceful stop does not wait for it
    }
    ~HttpJob() {
        if (rate_timer_.timer_set) ngx_del_timer(&rate_timer_);
        jsonrpc_router::give_back_answer(std::move(response_));
    }
    HttpJob(const HttpJob&) = delete;
    HttpJob& operator=(const HttpJob&) = delete;

    // Starts the exchange, or, while the client is over
    // jsonrpc_router_client_rate, keeps the body until it has paid back.
    void start(std::string_view body) {
        started = true;
        if (const ngx_msec_t wait = instance_.client_rate_wait(client_.get())) {
            body_.assign(body);
            ngx_add_timer(&rate_timer_, wait);
            return;
        }
        exchange_.start(body);
    }
    bool finished() const { return finished_; }
    // The request is answered another way (an exception): the exchange's end
    // is not waited for any more.
    void abandon() { finished_ = true; }
    bool started = false;  // the handler holds the request (r->main->count)
    bool in_handler = true;

    void exchange_done(Exchange& exchange) override {
        if (finished_) return;
        finished_ = true;
        ngx_int_t rc = NGX_ERROR;
        try {
            response_ = exchange.take_response();
            // The values live as long as the request (the exchange, this
            // job), the configuration (route and target names) or the program.
            using wallet::ngx::add_response_header_unowned;
            add_response_header_unowned(r_, "X-JSONRPC-Request-Id", exchange.request_id());
            add_response_header_unowned(r_, "X-JSONRPC-Cache", exchange.cache_status(batch_cache_status_));
            if (const router::Route* route = exchange.route()) {
                add_response_header_unowned(r_, "X-JSONRPC-Route", route->pattern.text());
                add_response_header_unowned(r_, "X-JSONRPC-Target", exchange.target_name());
            }
            rc = wallet::ngx::send_json_unowned(r_, NGX_HTTP_OK, response_);
        } catch (...) {
            rc = NGX_ERROR;
        }
        ngx_connection_t* c = r_->connection;
        bool async = !in_handler;
        ngx_http_finalize_request(r_, rc);  // may free the request and this job
        if (async) ngx_http_run_posted_requests(c);
    }

private:
    static void on_rate_timer(ngx_event_t* ev) {
        auto* job = static_cast<HttpJob*>(ev->data);
        std::string body = std::move(job->body_);
        job->start(body);  // may answer, finalize the request and free the job
    }
    static void fail_rate_timer(ngx_event_t* ev) {
        auto* job = static_cast<HttpJob*>(ev->data);
        if (job->finished_) return;
        job->abandon();
        ngx_connection_t* c = job->r_->connection;
        ngx_http_finalize_request(job->r_, ngx_http_jsonrpc_router_internal_error(job->r_));
        ngx_http_run_posted_requests(c);
    }

    ngx_http_request_t* r_;
    const RouterInstance& instance_;
    jsonrpc_router::ClientHold client_;  // held while the exchange lives (declared before it)
    ngx_event_t rate_timer_{};
    std::string body_;  // a request waiting for its client's rate
    Exchange exchange_;
    std::string response_;  // referenced by the output chain until the request ends
    std::string batch_cache_status_;  // a batch's X-JSONRPC-Cache
    bool finished_ = false;
};

// Pool memory is aligned for NGX_ALIGNMENT.
static_assert(alignof(HttpJob) <= NGX_ALIGNMENT);
void destroy_job(void* data) { std::destroy_at(static_cast<HttpJob*>(data)); }

void read_body(ngx_http_request_t* r) {
    auto* conf = static_cast<ngx_http_jsonrpc_router_loc_conf_t*>(ngx_http_get_module_loc_conf(r, ngx_http_jsonrpc_router_module));
    std::string scratch;  // the body when nginx holds it in several buffers
    std::string_view body;
    if (wallet::ngx::request_body_view(r, conf->max_body, scratch, body) != wallet::ngx::BodyRead::Ok) {
        ngx_http_finalize_request(
            r, ngx_http_jsonrpc_router_reject(r, NGX_HTTP_REQUEST_ENTITY_TOO_LARGE, wallet::jsonrpc::kInvalidRequest,
                                              "Invalid Request: request too large"));
        return;
    }
    // The job lives in the request's pool (no allocation of its own) and ends with it.
    ngx_pool_cleanup_t* cleanup = ngx_pool_cleanup_add(r->pool, sizeof(HttpJob));
    if (cleanup == nullptr) {
        ngx_http_finalize_request(r, NGX_HTTP_INTERNAL_SERVER_ERROR);
        return;
    }
    HttpJob* job = new (cleanup->data) HttpJob(r, *conf->instance);
    cleanup->handler = destroy_job;
    ngx_http_set_ctx(r, job, ngx_http_jsonrpc_router_module);
    r->main->count++;  // held while the calls start: a synchronous answer must not free r here
    job->start(body);
    job->in_handler = false;
    if (!job->finished()) {
        // Waiting for the cache or a target: notice a client that goes away.
        r->read_event_handler = ngx_http_test_reading;
        r->write_event_handler = ngx_http_request_empty_handler;
    }
    ngx_http_finalize_request(r, NGX_DONE);
}

// After an exception in read_body: answers unless the exchange did, then
// lets go of the request as read_body would have.
void fail_body(ngx_http_request_t* r) {
    auto* job = static_cast<HttpJob*>(ngx_http_get_module_ctx(r, ngx_http_jsonrpc_router_module));
    if (job == nullptr || !job->started) {
        ngx_http_finalize_request(r, ngx_http_jsonrpc_router_internal_error(r));
        return;
    }
    job->in_handler = false;
    if (!job->finished()) {
        job->abandon();
        ngx_http_finalize_request(r, ngx_http_jsonrpc_router_internal_error(r));
    }
    ngx_http_finalize_request(r, NGX_DONE);
}

// The whole body must arrive within jsonrpc_router_body_timeout: nginx's
// client_body_timeout only bounds the pause between two reads, so a client
// that trickles a byte now and then would hold the request, its connection
// and its max_body buffer for ever. While the body is read, the module's
// request context is this timer (an internal redirect, the 413 page, clears it).
void body_too_slow(ngx_event_t* ev) {
    auto* r = static_cast<ngx_http_request_t*>(ev->data);
    if (ngx_http_get_module_ctx(r, ngx_http_jsonrpc_router_module) != ev) return;
    ngx_http_set_ctx(r, nullptr, ngx_http_jsonrpc_router_module);
    auto* conf = static_cast<ngx_http_jsonrpc_router_loc_conf_t*>(ngx_http_get_module_loc_conf(r, ngx_http_jsonrpc_router_module));
    ngx_connection_t* c = r->connection;
    ngx_log_error(NGX_LOG_INFO, c->log, 0, "jsonrpc_router: request body not read within %M ms, closed", conf->body_timeout);
    // As nginx does on client_body_timeout: no answer, the connection closes.
    c->timedout = 1;
    ngx_http_finalize_request(r, NGX_HTTP_REQUEST_TIME_OUT);
    ngx_http_run_posted_requests(c);
}

void stop_body_deadline(void* data) {
    auto* timer = static_cast<ngx_event_t*>(data);
    if (timer->timer_set) ngx_del_timer(timer);
}

}  // namespace

ngx_int_t ngx_http_jsonrpc_router_read_body(ngx_http_request_t* r, const ngx_http_jsonrpc_router_loc_conf_t& conf) {
    // Both allocated before the body is read: once nginx waits for the rest
    // of it, the request can no longer be answered with a 500 here.
    ngx_pool_cleanup_t* cleanup = ngx_pool_cleanup_add(r->pool, sizeof(ngx_event_t));
    if (cleanup == nullptr) return NGX_HTTP_INTERNAL_SERVER_ERROR;
    auto* timer = static_cast<ngx_event_t*>(cleanup->data);
    ngx_memzero(timer, sizeof(ngx_event_t));
    timer->handler = wallet::ngx::guarded<"jsonrpc_router: request body deadline", body_too_slow>;
    timer->data = r;
    timer->log = r->connection->log;
    timer->cancelable = 1;  // a graceful stop does not wait for it
    cleanup->handler = stop_body_deadline;
    r->request_body_in_single_buf = 1;
    ngx_int_t rc = ngx_http_read_client_request_body(r, ngx_http_jsonrpc_router_body_handler);
    // A body that came with its headers (most do) was handled inside the
    // call: the deadline runs only while nginx waits for the rest of one.
    if (rc == NGX_AGAIN && ngx_http_get_module_ctx(r, ngx_http_jsonrpc_router_module) == nullptr) {
        ngx_http_set_ctx(r, timer, ngx_http_jsonrpc_router_module);
        ngx_add_timer(timer, conf.body_timeout);
    }
    return rc;
}

void ngx_http_jsonrpc_router_body_handler(ngx_http_request_t* r) noexcept {
    // The body is in: its deadline is over (the context becomes the job's).
    if (auto* deadline = static_cast<ngx_event_t*>(ngx_http_get_module_ctx(r, ngx_http_jsonrpc_router_module))) {
        stop_body_deadline(deadline);
        ngx_http_set_ctx(r, nullptr, ngx_http_jsonrpc_router_module);
    }
    wallet::ngx::guarded<"jsonrpc_router: request body", read_body, fail_body>(r);
}

ngx_int_t ngx_http_jsonrpc_router_internal_error(ngx_http_request_t* r) {
    if (r->header_sent) return NGX_ERROR;
    return ngx_http_jsonrpc_router_reject(r, NGX_HTTP_OK, wallet::jsonrpc::kInternalError, "Internal error");
}

ngx_int_t ngx_http_jsonrpc_router_reject(ngx_http_request_t* r, ngx_uint_t status, int code, const char* message) {
    try {
        const jsonrpc_router::RequestId request_id = jsonrpc_router::Worker::get().next_request_id();
        ngx_log_error(NGX_LOG_INFO, r->connection->log, 0, "jsonrpc_router: request_id=%s code=%d: %s", request_id.c_str(),
                      code, message);
        wallet::ngx::add_response_header(r, "X-JSONRPC-Request-Id", request_id);
        return wallet::ngx::send_json(r, status, wallet::jsonrpc::error_response("null", code, message, request_id));
    } catch (...) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }
}
