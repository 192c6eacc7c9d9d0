#include "router_websocket.hpp"

#include <algorithm>

#include <openssl/evp.h>
#include <openssl/rand.h>
#include <openssl/sha.h>

#include "jsonrpc_json.hpp"

namespace router::ws {

namespace {

std::string base64(const unsigned char* data, std::size_t size) {
    std::string out(4 * ((size + 2) / 3) + 1, '\0');
    int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()), data, static_cast<int>(size));
    out.resize(static_cast<std::size_t>(n));
    return out;
}

}  // namespace

std::string accept_key(std::string_view client_key) {
    std::string text(client_key);
    text += "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
    unsigned char digest[SHA_DIGEST_LENGTH];
    SHA1(reinterpret_cast<const unsigned char*>(text.data()), text.size(), digest);
    return base64(digest, sizeof(digest));
}

std::string make_client_key() {
    unsigned char nonce[16];
    RAND_bytes(nonce, sizeof(nonce));
    return base64(nonce, sizeof(nonce));
}

void append_frame_header(std::string& out, Opcode opcode, std::size_t size, bool mask, bool fin) {
    out.push_back(static_cast<char>((fin ? 0x80 : 0x00) | static_cast<std::uint8_t>(opcode)));
    std::uint8_t mask_bit = mask ? 0x80 : 0x00;
    if (size < 126) {
        out.push_back(static_cast<char>(mask_bit | size));
    } else if (size <= 0xFFFF) {
        out.push_back(static_cast<char>(mask_bit | 126));
        out.push_back(static_cast<char>((size >> 8) & 0xFF));
        out.push_back(static_cast<char>(size & 0xFF));
    } else {
        out.push_back(static_cast<char>(mask_bit | 127));
        for (int shift = 56; shift >= 0; shift -= 8) out.push_back(static_cast<char>((size >> shift) & 0xFF));
    }
}

std::string encode_frame(Opcode opcode, std::string_view payload, bool mask, bool fin) {
    std::string out;
    out.reserve(payload.size() + kMaxFrameHeader);
    append_frame_header(out, opcode, payload.size(), mask, fin);
    const std::size_t n = payload.size();
    if (!mask) {
        out += payload;
        return out;
    }
    unsigned char key[4];
    RAND_bytes(key, sizeof(key));
    out.append(reinterpret_cast<const char*>(key), 4);
    std::size_t start = out.size();
    out += payload;
    for (std::size_t i = 0; i < n; ++i) out[start + i] = static_cast<char>(out[start + i] ^ static_cast<char>(key[i % 4]));
    return out;
}

std::string encode_close(std::uint16_t code, std::string_view reason, bool mask) {
    std::string payload;
    payload.push_back(static_cast<char>(code >> 8));
    payload.push_back(static_cast<char>(code & 0xFF));
    payload += reason.substr(0, 120);
    return encode_frame(Opcode::Close, payload, mask);
}

Decoder::Status Decoder::fail(std::uint16_t code, std::string message) {
    error_code_ = code;
    error_ = std::move(message);
    return Status::Error;
}

Decoder::Status Decoder::next(Event& event) {
    if (error_code_ != 0) return Status::Error;
    for (;;) {
        std::string_view data(buffer_);
        data.remove_prefix(pos_);
        if (data.size() < 2) break;
        auto b0 = static_cast<std::uint8_t>(data[0]);
        auto b1 = static_cast<std::uint8_t>(data[1]);
        bool fin = (b0 & 0x80) != 0;
        if ((b0 & 0x70) != 0) return fail(close_code::protocol_error, "reserved bits set");
        auto opcode = static_cast<Opcode>(b0 & 0x0F);
        bool masked = (b1 & 0x80) != 0;
        if (role_ == Role::Server && !masked) return fail(close_code::protocol_error, "client frames must be masked");
        if (role_ == Role::Client && masked) return fail(close_code::protocol_error, "server frames must not be masked");
        std::uint64_t length = b1 & 0x7F;
        std::size_t header = 2;
        if (length == 126) {
            if (data.size() < 4) break;
            length = (static_cast<std::uint64_t>(static_cast<std::uint8_t>(data[2])) << 8) |
                     static_cast<std::uint8_t>(data[3]);
            header = 4;
        } else if (length == 127) {
            if (data.size() < 10) break;
            length = 0;
            for (std::size_t i = 2; i < 10; ++i) length = (length << 8) | static_cast<std::uint8_t>(data[i]);
            header = 10;
            // RFC 6455 section 5.2: the most significant bit must be 0 (a
            // larger length also wrapped the size checks below).
            if ((length >> 63) != 0) return fail(close_code::protocol_error, "frame length above 2^63");
        }
        bool control = (static_cast<std::uint8_t>(opcode) & 0x08) != 0;
        if (control && (length > 125 || !fin)) return fail(close_code::protocol_error, "bad control frame");
        if (!control && length > max_message_ - std::min(message_.size(), max_message_)) {
            return fail(close_code::too_big, "message larger than " + std::to_string(max_message_) + " bytes");
        }
        std::size_t mask_at = header;
        if (masked) header += 4;
        if (data.size() < header + length) break;
        std::string payload(data.substr(header, static_cast<std::size_t>(length)));
        if (masked) {
            for (std::size_t i = 0; i < payload.size(); ++i) {
                payload[i] = static_cast<char>(payload[i] ^ data[mask_at + (i % 4)]);
            }
        }
        pos_ += header + static_cast<std::size_t>(length);
        if (pos_ == buffer_.size()) {
            buffer_.clear();
            pos_ = 0;
        } else if (pos_ > 65536) {
            buffer_.erase(0, pos_);
            pos_ = 0;
        }
        switch (opcode) {
            case Opcode::Ping:
                event = Event{Event::Kind::Ping, opcode, std::move(payload), 0};
                return Status::Event;
            case Opcode::Pong:
                event = Event{Event::Kind::Pong, opcode, std::move(payload), 0};
                return Status::Event;
            case Opcode::Close: {
                std::uint16_t code = close_code::normal;
                std::string reason;
                if (payload.size() == 1) return fail(close_code::protocol_error, "bad close payload");
                if (payload.size() >= 2) {
                    code = static_cast<std::uint16_t>((static_cast<std::uint8_t>(payload[0]) << 8) |
                                                      static_cast<std::uint8_t>(payload[1]));
                    reason = payload.substr(2);
                }
                event = Event{Event::Kind::Close, opcode, std::move(reason), code};
                return Status::Event;
            }
            case Opcode::Text:
            case Opcode::Binary:
                if (in_message_) return fail(close_code::protocol_error, "new message inside a fragmented one");
                message_opcode_ = opcode;
                message_ = std::move(payload);
                in_message_ = true;
                break;
            case Opcode::Continuation:
                if (!in_message_) return fail(close_code::protocol_error, "continuation without a message");
                message_ += payload;
                break;
            default:
                return fail(close_code::protocol_error, "unknown opcode");
        }
        if (fin) {
            in_message_ = false;
            if (message_opcode_ == Opcode::Text && !jsonrpc::valid_utf8(message_)) {
                return fail(close_code::invalid_payload, "text message is not UTF-8");
            }
            event = Event{Event::Kind::Message, message_opcode_, std::move(message_), 0};
            message_.clear();
            return Status::Event;
        }
    }
    return Status::NeedMore;
}

}  // namespace router::ws
