// Defects the fuzz targets (t/fuzz) found in the router's parsers, one test
// each; the inputs that found them stay in t/fuzz/corpus/<target>/crash-*.
#include <gtest/gtest.h>

#include <string>

#include "router_http.hpp"
#include "router_websocket.hpp"

using namespace router;

namespace {

HttpMessageParser::State parse_response(const std::string& text) {
    HttpMessageParser parser(HttpMessageParser::Kind::Response);
    return parser.feed(text);
}

}  // namespace

// t/fuzz/corpus/http_response/crash-status-000: "000" was taken for a status.
TEST(RouterFuzzRegressions, HttpStatusOutsideOneToFiveHundredsIsRefused) {
    for (const char* line : {"HTTP/1.1 000 X", "HTTP/1.1 099 X", "HTTP/1.1 600 X", "HTTP/1.1 999 X", "HTTP/1.1x200 OK"}) {
        EXPECT_EQ(parse_response(std::string(line) + "\r\nContent-Length: 0\r\n\r\n"), HttpMessageParser::State::Error) << line;
    }
    for (const char* line : {"HTTP/1.1 100 Continue", "HTTP/1.1 200 OK", "HTTP/1.0 503 Busy", "HTTP/1.1 599 X"}) {
        EXPECT_EQ(parse_response(std::string(line) + "\r\nContent-Length: 0\r\n\r\n"), HttpMessageParser::State::Complete) << line;
    }
}

// t/fuzz/corpus/websocket/crash-length-above-2-63: a 64-bit frame length near
// 2^64 wrapped the size checks inside a fragmented message, and substr threw
// (an exception out of the nginx handler).
TEST(RouterFuzzRegressions, WebSocketLengthWithTheHighBitSetIsAProtocolError) {
    ws::Decoder decoder(ws::Decoder::Role::Client, 1 << 16);
    std::string stream = ws::encode_frame(ws::Opcode::Text, "first", false, /*fin=*/false);
    stream += std::string("\x00\x7f\xff\xff\xff\xff\xff\xff\xff\xff", 10);  // continuation, length 2^64 - 1
    stream += "tail";
    decoder.feed(stream);
    ws::Event event;
    EXPECT_EQ(decoder.next(event), ws::Decoder::Status::Error);
    EXPECT_EQ(decoder.error_code(), ws::close_code::protocol_error);

    ws::Decoder big(ws::Decoder::Role::Client, 1 << 16);
    big.feed(std::string("\x82\x7f\x00\x00\x00\x00\x00\x01\x00\x01", 10));  // 65537 bytes: over the limit
    EXPECT_EQ(big.next(event), ws::Decoder::Status::Error);
    EXPECT_EQ(big.error_code(), ws::close_code::too_big);
}
