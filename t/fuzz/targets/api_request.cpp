// The wallet_history API's request parser: the JSON-RPC envelope, the method
// and every parameter's validation (account, dates and window, limit,
// op_types, cursor), before any database work.
#include <cstddef>
#include <cstdint>

#include "api_request.hpp"
#include "fuzz_check.hpp"
#include "jsonrpc_json.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static const wallet::CursorCodec cursors("fuzz-target-cursor-secret");
    const wallet::api::RequestLimits limits;
    const wallet::api::ParsedRequest parsed = wallet::api::parse_request(fuzz::text(data, size), limits, cursors);

    fuzz::check(parsed.call.has_value() != parsed.error.has_value(), "either a call or an error");
    jsonrpc::JsonDocument id;
    fuzz::check(id.parse(parsed.id_json, 64) == jsonrpc::JsonParseStatus::Ok, "the id is JSON text");
    if (parsed.error) {
        fuzz::check(parsed.error->code < 0 && !parsed.error->message.empty(), "an error has a code and a message");
        return 0;
    }
    const wallet::api::PageQuery& page = parsed.call->page;
    fuzz::check(page.limit >= 1 && page.limit <= limits.max_limit, "the page size is within the limits");
    fuzz::check(page.op_types.size() <= static_cast<std::size_t>(limits.max_op_types), "op_types within the limit");
    for (std::size_t i = 1; i < page.op_types.size(); ++i) {
        fuzz::check(page.op_types[i - 1] < page.op_types[i], "op_types sorted and unique");
    }
    for (const std::string& op_type : page.op_types) fuzz::check(wallet::api::is_known_op_type(op_type), "op_types known");
    if (page.from && page.to) fuzz::check(*page.from < *page.to, "the window is not empty");
    (void)wallet::api::query_fingerprint(parsed.call->method, page);
    return 0;
}
