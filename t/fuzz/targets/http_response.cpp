// The HTTP/1.1 parser of the router's upstream client (responses:
// Content-Length, chunked and read-until-close bodies, 101 upgrades) and of
// the test backends (requests), fed in pieces whose size comes from the
// input, then told the peer closed.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_check.hpp"
#include "router_http.hpp"

namespace {

void parse(router::HttpMessageParser::Kind kind, std::string_view stream, std::size_t piece, std::size_t max_body) {
    using State = router::HttpMessageParser::State;
    router::HttpMessageParser parser(kind, max_body);
    State state = State::Incomplete;
    while (!stream.empty() && state == State::Incomplete) {
        const std::size_t n = std::min(piece, stream.size());
        state = parser.feed(stream.substr(0, n));
        stream.remove_prefix(n);
    }
    if (state == State::Incomplete) state = parser.finish();
    fuzz::check(state == parser.state(), "feed and finish report the parser's state");
    if (state == State::Error) {
        fuzz::check(!parser.error().empty(), "an error says why");
        return;
    }
    if (state == State::Complete) {
        fuzz::check(parser.headers_done(), "a complete message has its head");
        fuzz::check(parser.body().size() <= max_body, "the body is within the limit");
        if (kind == router::HttpMessageParser::Kind::Response) {
            fuzz::check(parser.status() >= 100 && parser.status() <= 599, "a status code is 1xx to 5xx");
        }
        (void)parser.header("content-type");
        (void)parser.take_leftover();
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 1) return 0;
    const std::size_t piece = data[0] < 128 ? static_cast<std::size_t>(data[0]) + 1 : 1 << 20;
    const std::string_view stream = fuzz::text(data + 1, size - 1);
    parse(router::HttpMessageParser::Kind::Response, stream, piece, 4096);
    parse(router::HttpMessageParser::Kind::Request, stream, piece, 4096);
    return 0;
}
