// Incremental HTTP/1.1 message parsing for the router's own upstream client
// (responses) and the test backends (requests): Content-Length, chunked and
// read-until-close bodies, keep-alive, and the 101 of a WebSocket upgrade.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace router {

class HttpMessageParser {
public:
    enum class Kind { Response, Request };
    enum class State { Incomplete, Complete, Error };

    explicit HttpMessageParser(Kind kind, std::size_t max_body = 64 << 20) : kind_(kind), max_body_(max_body) {}

    // Ready for the next message on the same connection (keeps the buffers' memory).
    void reset();
    // Adds bytes; returns Complete once a whole message is in.
    State feed(std::string_view data);
    // The peer closed the connection: completes a read-until-close body.
    State finish();
    State state() const { return state_; }
    const std::string& error() const { return error_; }

    int status() const { return status_; }
    const std::string& method() const { return method_; }
    const std::string& target() const { return target_; }
    std::optional<std::string> header(std::string_view name) const;  // case-insensitive
    bool keep_alive() const { return keep_alive_; }
    const std::string& body() const { return body_; }
    std::string take_body() { return std::move(body_); }
    // The next body is written into `memory` (a string given back after an
    // earlier take_body): its capacity is kept, its contents dropped.
    void reuse_body(std::string memory) {
        memory.clear();
        body_ = std::move(memory);
    }
    // Bytes received after the end of the message (pipelined data, or the
    // first WebSocket frames after a 101).
    std::string take_leftover();
    bool headers_done() const { return headers_done_; }

private:
    State parse_head();
    State parse_body();
    State fail(std::string message);
    // The value of a header (case-insensitive name), a view into head_.
    std::optional<std::string_view> header_view(std::string_view name) const;

    Kind kind_;
    std::size_t max_body_;
    State state_ = State::Incomplete;
    std::string error_;
    std::string buffer_;
    std::size_t consumed_ = 0;  // bytes of buffer_ already parsed
    bool headers_done_ = false;
    int status_ = 0;
    std::string method_;
    std::string target_;
    // The header lines as received, and where each name and value is in
    // them: kept from one message to the next, so that parsing a head
    // allocates nothing on a kept-alive connection.
    struct HeaderSpan {
        std::size_t name_at, name_size, value_at, value_size;
    };
    std::string head_;
    std::vector<HeaderSpan> headers_;
    bool keep_alive_ = true;
    enum class BodyMode { None, Length, Chunked, UntilClose } mode_ = BodyMode::None;
    std::size_t remaining_ = 0;  // Length: bytes left; Chunked: bytes left in chunk
    bool in_chunk_ = false;
    std::string body_;
};

// True when the comma-separated header value contains `token` (case-insensitive).
bool header_has_token(std::string_view value, std::string_view token);

}  // namespace router
