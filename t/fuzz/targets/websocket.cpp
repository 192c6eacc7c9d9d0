// The WebSocket frame decoder, in both roles (the router's endpoint reads
// masked client frames, its ws:// upstream client unmasked server frames),
// fed in pieces whose sizes come from the input. Every message decoded is
// encoded again and must decode to the same payload.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_check.hpp"
#include "router_websocket.hpp"

namespace {

using router::ws::Decoder;
using router::ws::Event;

void check_round_trip(const Event& event, Decoder::Role role) {
    if (event.kind != Event::Kind::Message) return;
    Decoder again(role, event.payload.size() + 1);
    again.feed(router::ws::encode_frame(event.opcode, event.payload, role == Decoder::Role::Server));
    Event back;
    fuzz::check(again.next(back) == Decoder::Status::Event && back.kind == Event::Kind::Message &&
                    back.opcode == event.opcode && back.payload == event.payload,
                "a decoded message encodes and decodes to itself");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 2) return 0;
    const Decoder::Role role = (data[0] & 1) != 0 ? Decoder::Role::Server : Decoder::Role::Client;
    const std::size_t piece = 1 + (data[1] % 64);  // bytes per read, 64 = one big read mostly
    const std::size_t max_message = (data[0] & 2) != 0 ? 125 : 1 << 16;
    std::string_view stream = fuzz::text(data + 2, size - 2);

    Decoder decoder(role, max_message);
    bool failed = false;
    while (!stream.empty() && !failed) {
        const std::size_t n = piece == 64 ? stream.size() : std::min(piece, stream.size());
        decoder.feed(stream.substr(0, n));
        stream.remove_prefix(n);
        Event event;
        for (Decoder::Status status; (status = decoder.next(event)) != Decoder::Status::NeedMore;) {
            if (status == Decoder::Status::Error) {
                fuzz::check(decoder.error_code() >= 1000 && !decoder.error().empty(), "an error has a close code and a reason");
                failed = true;
                break;
            }
            if (event.kind == Event::Kind::Message) fuzz::check(event.payload.size() <= max_message, "messages within the limit");
            check_round_trip(event, role);
        }
    }
    return 0;
}
