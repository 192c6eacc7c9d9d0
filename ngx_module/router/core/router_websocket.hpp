// RFC 6455 framing for the router's WebSocket endpoint, its ws:// upstream
// client and the test backends: handshake key, frame encoding, and a decoder
// that reassembles fragmented messages and surfaces control frames.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace router::ws {

enum class Opcode : std::uint8_t { Continuation = 0x0, Text = 0x1, Binary = 0x2, Close = 0x8, Ping = 0x9, Pong = 0xA };

namespace close_code {
inline constexpr std::uint16_t normal = 1000;
inline constexpr std::uint16_t going_away = 1001;
inline constexpr std::uint16_t protocol_error = 1002;
inline constexpr std::uint16_t unsupported_data = 1003;
inline constexpr std::uint16_t invalid_payload = 1007;
inline constexpr std::uint16_t policy_violation = 1008;
inline constexpr std::uint16_t too_big = 1009;
inline constexpr std::uint16_t internal_error = 1011;
}  // namespace close_code

// Sec-WebSocket-Accept for a client's Sec-WebSocket-Key.
std::string accept_key(std::string_view client_key);
// A random Sec-WebSocket-Key.
std::string make_client_key();

// The most bytes a frame's header takes (a masked frame's key included).
constexpr std::size_t kMaxFrameHeader = 14;
// Appends the header of a frame of `size` payload bytes (a masked frame's
// key is not part of it).
void append_frame_header(std::string& out, Opcode opcode, std::size_t size, bool mask = false, bool fin = true);
// One frame; `mask` is set by clients (RFC 6455 §5.3).
std::string encode_frame(Opcode opcode, std::string_view payload, bool mask = false, bool fin = true);
std::string encode_close(std::uint16_t code, std::string_view reason, bool mask = false);

struct Event {
    enum class Kind { Message, Ping, Pong, Close } kind;
    Opcode opcode = Opcode::Text;  // Text or Binary for messages
    std::string payload;           // message text, ping/pong data, close reason
    std::uint16_t close_code = 0;
};

// Decodes frames from a byte stream. Masked frames are required from clients
// (server side) and refused from servers (client side).
class Decoder {
public:
    enum class Role { Server, Client };
    Decoder(Role role, std::size_t max_message) : role_(role), max_message_(max_message) {}

    void feed(std::string_view data) { buffer_.append(data); }
    enum class Status { NeedMore, Event, Error };
    // Next event, if a whole one is buffered.
    Status next(Event& event);
    // On Error: the close code to send and why.
    std::uint16_t error_code() const { return error_code_; }
    const std::string& error() const { return error_; }
    std::size_t buffered() const { return buffer_.size() - pos_; }

private:
    Status fail(std::uint16_t code, std::string message);

    Role role_;
    std::size_t max_message_;
    std::string buffer_;
    std::size_t pos_ = 0;
    std::string message_;        // fragments so far
    bool in_message_ = false;
    Opcode message_opcode_ = Opcode::Text;
    std::uint16_t error_code_ = 0;
    std::string error_;
};

}  // namespace router::ws
