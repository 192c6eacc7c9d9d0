#include "router_http.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>

namespace router {

namespace {

// ASCII only (header names and tokens are), without the C locale's tolower call per byte.
char lower_ascii(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

std::string lower(std::string_view s) {
    std::string out(s);
    for (char& c : out) c = lower_ascii(c);
    return out;
}

bool equals_lower(std::string_view s, std::string_view lower_word) {
    if (s.size() != lower_word.size()) return false;
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (lower_ascii(s[i]) != lower_word[i]) return false;
    }
    return true;
}

bool equals_ignoring_case(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i) {
        if (lower_ascii(a[i]) != lower_ascii(b[i])) return false;
    }
    return true;
}

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
    return s;
}

constexpr std::size_t kMaxHead = 64 * 1024;

}  // namespace

bool header_has_token(std::string_view value, std::string_view token) {
    const std::string wanted = lower(token);
    std::size_t start = 0;
    while (start <= value.size()) {
        std::size_t comma = value.find(',', start);
        std::string_view part = trim(value.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start));
        if (equals_lower(part, wanted)) return true;
        if (comma == std::string_view::npos) break;
        start = comma + 1;
    }
    return false;
}

std::optional<std::string_view> HttpMessageParser::header_view(std::string_view name) const {
    const std::string_view head(head_);
    for (const HeaderSpan& h : headers_) {
        if (equals_ignoring_case(name, head.substr(h.name_at, h.name_size))) return head.substr(h.value_at, h.value_size);
    }
    return std::nullopt;
}

std::optional<std::string> HttpMessageParser::header(std::string_view name) const {
    if (auto value = header_view(name)) return std::string(*value);
    return std::nullopt;
}

void HttpMessageParser::reset() {
    state_ = State::Incomplete;
    error_.clear();
    buffer_.clear();
    consumed_ = 0;
    headers_done_ = false;
    status_ = 0;
    method_.clear();
    target_.clear();
    head_.clear();
    headers_.clear();
    keep_alive_ = true;
    mode_ = BodyMode::None;
    remaining_ = 0;
    in_chunk_ = false;
    body_.clear();
}

HttpMessageParser::State HttpMessageParser::fail(std::string message) {
    error_ = std::move(message);
    state_ = State::Error;
    return state_;
}

HttpMessageParser::State HttpMessageParser::feed(std::string_view data) {
    if (state_ != State::Incomplete) {
        buffer_.append(data);  // leftover after a complete message
        return state_;
    }
    buffer_.append(data);
    if (!headers_done_) {
        State s = parse_head();
        if (s != State::Incomplete || !headers_done_) return s;
    }
    return parse_body();
}

HttpMessageParser::State HttpMessageParser::finish() {
    if (state_ != State::Incomplete) return state_;
    if (headers_done_ && mode_ == BodyMode::UntilClose) {
        keep_alive_ = false;
        state_ = State::Complete;
        return state_;
    }
    return fail(headers_done_ ? "connection closed before the end of the body" : "connection closed before a response");
}

std::string HttpMessageParser::take_leftover() {
    std::string out = buffer_.substr(consumed_);
    buffer_.clear();
    consumed_ = 0;
    return out;
}

HttpMessageParser::State HttpMessageParser::parse_head() {
    std::size_t end = buffer_.find("\r\n\r\n");
    if (end == std::string::npos) {
        if (buffer_.size() > kMaxHead) return fail("header too large");
        return State::Incomplete;
    }
    head_.assign(buffer_, 0, end);
    const std::string_view head(head_);
    consumed_ = end + 4;
    std::size_t line_end = head.find("\r\n");
    std::string_view first = head.substr(0, line_end);
    bool http10 = false;
    if (kind_ == Kind::Response) {
        // HTTP/1.1 200 OK
        if (first.substr(0, 5) != "HTTP/" || first.size() < 12) return fail("bad status line");
        http10 = first.substr(0, 8) == "HTTP/1.0";
        std::string_view code = first.substr(9, 3);
        // Three digits, 1xx to 5xx (RFC 9110 section 15): "000" is no status.
        if (first[8] != ' ' || code[0] < '1' || code[0] > '5' ||
            !std::all_of(code.begin(), code.end(), [](char c) { return c >= '0' && c <= '9'; })) {
            return fail("bad status code");
        }
        status_ = (code[0] - '0') * 100 + (code[1] - '0') * 10 + (code[2] - '0');
    } else {
        auto sp1 = first.find(' ');
        auto sp2 = first.rfind(' ');
        if (sp1 == std::string_view::npos || sp2 == sp1) return fail("bad request line");
        method_ = std::string(first.substr(0, sp1));
        target_ = std::string(first.substr(sp1 + 1, sp2 - sp1 - 1));
        http10 = first.substr(sp2 + 1) == "HTTP/1.0";
    }
    keep_alive_ = !http10;
    // The three headers that frame the message are picked up in the one
    // pass over the lines (the first of each name counts, as with header_view).
    std::optional<std::string_view> connection, te, length;
    std::size_t pos = line_end == std::string_view::npos ? head.size() : line_end + 2;
    while (pos < head.size()) {
        std::size_t next = head.find("\r\n", pos);
        if (next == std::string_view::npos) next = head.size();
        std::string_view line = head.substr(pos, next - pos);
        auto colon = line.find(':');
        if (colon == std::string_view::npos) return fail("bad header line");
        const std::string_view name = trim(line.substr(0, colon));
        const std::string_view value = trim(line.substr(colon + 1));
        headers_.push_back({static_cast<std::size_t>(name.data() - head.data()), name.size(),
                            static_cast<std::size_t>(value.data() - head.data()), value.size()});
        std::optional<std::string_view>* framing = equals_lower(name, "content-length")      ? &length
                                                   : equals_lower(name, "connection")        ? &connection
                                                   : equals_lower(name, "transfer-encoding") ? &te
                                                                                             : nullptr;
        if (framing != nullptr && !*framing) *framing = value;
        pos = next + 2;
    }
    headers_done_ = true;
    if (connection) {
        if (header_has_token(*connection, "close")) keep_alive_ = false;
        if (header_has_token(*connection, "keep-alive")) keep_alive_ = true;
    }
    if (kind_ == Kind::Response && (status_ / 100 == 1 || status_ == 204 || status_ == 304)) {
        mode_ = BodyMode::None;
    } else if (te && header_has_token(*te, "chunked")) {
        mode_ = BodyMode::Chunked;
    } else if (length) {
        if (length->empty() || length->size() > 15 || length->find_first_not_of("0123456789") != std::string::npos) {
            return fail("bad Content-Length");
        }
        std::from_chars(length->data(), length->data() + length->size(), remaining_);
        if (remaining_ > max_body_) return fail("body too large");
        mode_ = remaining_ == 0 ? BodyMode::None : BodyMode::Length;
    } else if (kind_ == Kind::Response) {
        mode_ = BodyMode::UntilClose;
        keep_alive_ = false;
    } else {
        mode_ = BodyMode::None;
    }
    return State::Incomplete;
}

HttpMessageParser::State HttpMessageParser::parse_body() {
    switch (mode_) {
        case BodyMode::None:
            state_ = State::Complete;
            return state_;
        case BodyMode::Length: {
            std::size_t take = std::min(remaining_, buffer_.size() - consumed_);
            body_.append(buffer_, consumed_, take);
            consumed_ += take;
            remaining_ -= take;
            if (remaining_ == 0) state_ = State::Complete;
            break;
        }
        case BodyMode::UntilClose:
            body_.append(buffer_, consumed_, std::string::npos);
            consumed_ = buffer_.size();
            if (body_.size() > max_body_) return fail("body too large");
            break;
        case BodyMode::Chunked:
            for (;;) {
                if (in_chunk_) {
                    std::size_t take = std::min(remaining_, buffer_.size() - consumed_);
                    body_.append(buffer_, consumed_, take);
                    consumed_ += take;
                    remaining_ -= take;
                    if (remaining_ > 0) break;
                    if (buffer_.size() - consumed_ < 2) break;  // wait for the chunk's CRLF
                    if (buffer_.compare(consumed_, 2, "\r\n") != 0) return fail("bad chunk end");
                    consumed_ += 2;
                    in_chunk_ = false;
                    continue;
                }
                std::size_t line_end = buffer_.find("\r\n", consumed_);
                if (line_end == std::string::npos) {
                    if (buffer_.size() - consumed_ > 1024) return fail("bad chunk size line");
                    break;
                }
                std::string_view size_text(buffer_.data() + consumed_, line_end - consumed_);
                size_text = size_text.substr(0, size_text.find(';'));
                size_text = trim(size_text);
                if (size_text.empty() || size_text.size() > 15) return fail("bad chunk size");
                std::size_t size = 0;
                for (char c : size_text) {
                    int v = std::isdigit(static_cast<unsigned char>(c)) ? c - '0'
                            : (c >= 'a' && c <= 'f')                    ? c - 'a' + 10
                            : (c >= 'A' && c <= 'F')                    ? c - 'A' + 10
                                                                        : -1;
                    if (v < 0) return fail("bad chunk size");
                    size = size * 16 + static_cast<std::size_t>(v);
                }
                if (size == 0) {
                    // Last chunk: skip trailers up to the empty line.
                    std::size_t trailer_end = buffer_.find("\r\n\r\n", line_end);
                    if (buffer_.compare(line_end, 4, "\r\n\r\n") == 0) {
                        consumed_ = line_end + 4;
                    } else if (trailer_end != std::string::npos) {
                        consumed_ = trailer_end + 4;
                    } else {
                        break;
                    }
                    state_ = State::Complete;
                    break;
                }
                if (body_.size() + size > max_body_) return fail("body too large");
                consumed_ = line_end + 2;
                remaining_ = size;
                in_chunk_ = true;
            }
            break;
    }
    // Drop parsed bytes now and then so long bodies do not double memory.
    if (state_ == State::Incomplete && consumed_ > 0 && consumed_ == buffer_.size()) {
        buffer_.clear();
        consumed_ = 0;
    }
    return state_;
}

}  // namespace router
