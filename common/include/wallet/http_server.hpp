// A small threaded HTTP/1.1 server: one thread per connection, keep-alive,
// Content-Length bodies, a request handler callback and a graceful stop.
// Used by the node simulator, the indexer's liveness endpoint and test
// stand-ins of remote services, none of which need more than loopback speed
// with a handful of connections.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "wallet/result.hpp"

namespace wallet {

struct HttpRequest {
    std::string method;  // "GET", "POST", ...
    std::string target;  // path and query as sent ("/", "/sim/control?x=1")
    std::vector<std::pair<std::string, std::string>> headers;  // names lower-cased
    std::string body;
    std::string peer;  // "127.0.0.1:54321"
    // Requested when the server stops: long handlers (deliberate delays) wait on it.
    std::stop_token stop;

    // The path without the query string.
    std::string_view path() const;
    // The value of a header (name in lower case), or nullptr.
    const std::string* header(std::string_view lower_name) const;
};

struct HttpResponse {
    int status = 200;
    std::string content_type = "application/json";
    std::vector<std::pair<std::string, std::string>> headers;  // extra headers
    std::string body;
    // Sent instead of `body` when set: memory the handler keeps valid until the
    // response is written, e.g. a buffer of the handler's (= the connection's)
    // thread that it reuses for the next request; saves copying large bodies.
    std::optional<std::string_view> external_body;
    bool close_connection = false;

    // Deliberate misbehaviour, for stand-ins of remote services in tests:
    // announce the whole body in Content-Length, send only this many bytes, then close;
    std::optional<std::size_t> truncate_body_at;
    // send nothing, wait this long (or until the peer hangs up or the server
    // stops), then close the connection without an answer.
    std::optional<std::chrono::milliseconds> hang_then_close;
};

using HttpHandler = std::function<void(const HttpRequest&, HttpResponse&)>;

struct HttpServerOptions {
    std::string host = "127.0.0.1";
    std::uint16_t port = 0;  // 0: the kernel picks a free port, see HttpServer::port()
    std::size_t max_header_bytes = 64 * 1024;
    std::size_t max_body_bytes = 64 * 1024 * 1024;
    std::size_t max_connections = 256;  // further connections wait in the listen backlog
    // A connection that sends nothing for this long is closed.
    std::chrono::milliseconds idle_timeout = std::chrono::minutes(5);
};

class HttpServer {
public:
    // Binds and starts accepting; the handler runs on connection threads, so
    // it must be thread-safe.
    static Result<std::unique_ptr<HttpServer>> start(HttpServerOptions options, HttpHandler handler);

    ~HttpServer();  // stops
    HttpServer(const HttpServer&) = delete;
    HttpServer& operator=(const HttpServer&) = delete;

    std::uint16_t port() const;
    // Stops accepting, wakes waiting handlers, closes every connection and
    // joins all threads. Idempotent.
    void stop();

    struct Impl;

private:
    explicit HttpServer(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

// The reason phrase of a status code ("OK", "Not Found", ...).
std::string_view http_reason_phrase(int status);

}  // namespace wallet
