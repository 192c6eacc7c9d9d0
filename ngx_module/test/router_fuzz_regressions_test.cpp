// Defects the fuzz targets (t/fuzz) found in the router's parsers, one test
// each; the inputs that found them stay in t/fuzz/corpus/<target>/crash-*.
#include <gtest/gtest.h>

#include <string>

#include "router_http.hpp"

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
