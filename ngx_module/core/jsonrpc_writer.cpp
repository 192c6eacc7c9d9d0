#include "jsonrpc_writer.hpp"

namespace wallet::jsonrpc {

void append_json_string(std::string& out, std::string_view text) {
    static constexpr char kHex[] = "0123456789abcdef";
    out.push_back('"');
    for (char ch : text) {
        const auto c = static_cast<unsigned char>(ch);
        switch (c) {
        case '"': out += "\\\""; break;
        case '\\': out += "\\\\"; break;
        case '\n': out += "\\n"; break;
        case '\r': out += "\\r"; break;
        case '\t': out += "\\t"; break;
        default:
            if (c < 0x20 || c == 0x7f) {
                out += "\\u00";
                out.push_back(kHex[c >> 4]);
                out.push_back(kHex[c & 15]);
            } else {
                out.push_back(ch);
            }
        }
    }
    out.push_back('"');
}

std::string error_response(std::string_view id_json, int code, std::string_view message) {
    std::string out = R"({"jsonrpc":"2.0","error":{"code":)";
    out += std::to_string(code);
    out += R"(,"message":)";
    append_json_string(out, message);
    out += R"(},"id":)";
    out += id_json.empty() ? std::string_view("null") : id_json;
    out += '}';
    return out;
}

std::string result_response(std::string_view id_json, std::string_view result_json) {
    std::string out = R"({"jsonrpc":"2.0","result":)";
    out.reserve(out.size() + result_json.size() + id_json.size() + 16);
    out += result_json;
    out += R"(,"id":)";
    out += id_json.empty() ? std::string_view("null") : id_json;
    out += '}';
    return out;
}

}  // namespace wallet::jsonrpc
