#include "wallet/node_client.hpp"

#include <condition_variable>
#include <cstdio>
#include <functional>
#include <mutex>
#include <random>

#include <curl/curl.h>

#include "wallet/json_scan.hpp"
#include "wallet/json_util.hpp"

namespace wallet {

bool interruptible_sleep(std::chrono::milliseconds duration, const std::stop_token& stop) {
    std::mutex mutex;
    std::condition_variable_any wake;
    std::unique_lock lock(mutex);
    return !wake.wait_for(lock, stop, duration, [] { return false; }) && !stop.stop_requested();
}

const char* node_failure_name(NodeFailure failure) noexcept {
    switch (failure) {
        case NodeFailure::None: return "none";
        case NodeFailure::Timeout: return "timeout";
        case NodeFailure::Transport: return "transport";
        case NodeFailure::HttpStatus: return "http_status";
        case NodeFailure::RpcError: return "rpc_error";
        case NodeFailure::Malformed: return "malformed";
        case NodeFailure::Oversized: return "oversized";
        case NodeFailure::WrongAnswer: return "wrong_answer";
        case NodeFailure::Stopped: return "stopped";
    }
    return "unknown";
}

namespace {

// The outcome of one attempt: a value, or a failure of some kind.
template <typename T>
struct Attempt {
    std::optional<T> value;
    NodeFailure failure = NodeFailure::None;
    std::string message;

    static Attempt ok(T v) { return Attempt{std::move(v), NodeFailure::None, {}}; }
    static Attempt fail(NodeFailure kind, std::string why) { return Attempt{std::nullopt, kind, std::move(why)}; }
};

template <typename T, typename U>
Attempt<T> forward_failure(const Attempt<U>& failed) {
    return Attempt<T>::fail(failed.failure, failed.message);
}

struct ReceiveState {
    std::string* body;
    std::size_t limit;
    bool oversized = false;
};

std::size_t receive(char* data, std::size_t size, std::size_t count, void* user) {
    auto* state = static_cast<ReceiveState*>(user);
    const std::size_t bytes = size * count;
    if (state->body->size() + bytes > state->limit) {
        state->oversized = true;
        return 0;  // aborts the transfer
    }
    state->body->append(data, bytes);
    return bytes;
}

int progress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
    const auto* stop = static_cast<const std::stop_token*>(user);
    return stop->stop_requested() ? 1 : 0;
}

std::string hex8(std::int64_t block_num) {
    char text[9];
    std::snprintf(text, sizeof text, "%08llx", static_cast<unsigned long long>(block_num) & 0xffffffffULL);
    return text;
}

bool is_block_id_of(std::string_view id, std::int64_t block_num) {
    if (id.size() != 40) return false;
    for (const char c : id) {
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'))) return false;
    }
    const std::string prefix = hex8(block_num);
    for (std::size_t i = 0; i < 8; ++i) {
        const char c = id[i] >= 'A' && id[i] <= 'F' ? static_cast<char>(id[i] - 'A' + 'a') : id[i];
        if (c != prefix[i]) return false;
    }
    return true;
}

JsonPtr request_object(const std::string& method, json_t* params, std::uint64_t id) {
    JsonPtr request = json_own(json_object());
    json_object_set_new(request.get(), "jsonrpc", json_string("2.0"));
    json_object_set_new(request.get(), "id", json_integer(static_cast<json_int_t>(id)));
    json_object_set_new(request.get(), "method", json_string(method.c_str()));
    json_object_set(request.get(), "params", params);
    return request;
}

std::string rpc_error_text(const json_t* error) {
    const auto message = json::string_view_of(json_object_get(error, "message"));
    std::string text = "JSON-RPC error";
    if (const json_t* code = json_object_get(error, "code"); json_is_integer(code)) {
        text += " " + std::to_string(json_integer_value(code));
    }
    if (message) text += ": " + std::string(message->substr(0, 200));
    return text;
}

// The `result` of a response object with the expected id.
Attempt<JsonPtr> result_of(json_t* response, std::uint64_t id) {
    if (!json_is_object(response)) return Attempt<JsonPtr>::fail(NodeFailure::Malformed, "response is not a JSON-RPC object");
    if (const json_t* error = json_object_get(response, "error"); error != nullptr && !json_is_null(error)) {
        return Attempt<JsonPtr>::fail(NodeFailure::RpcError, rpc_error_text(error));
    }
    auto answered = json::to_int64(json_object_get(response, "id"));
    if (!answered || static_cast<std::uint64_t>(*answered) != id) {
        return Attempt<JsonPtr>::fail(NodeFailure::WrongAnswer, "response id does not match the request");
    }
    json_t* result = json_object_get(response, "result");
    if (result == nullptr) return Attempt<JsonPtr>::fail(NodeFailure::Malformed, "response has no result");
    return Attempt<JsonPtr>::ok(json_ref(result));
}

// One pass over a batch answer of get_ops_in_block: per response its id,
// error and, in its result, every entry's text, block, virtual flag and
// operation type. Each byte is validated once; nothing is parsed into a tree.
struct ScannedResponse {
    std::optional<std::int64_t> id;
    bool has_result = false;
    std::string_view error;
    std::vector<RawEntry> entries;
    std::string problem;  // a well-formed but unusable entry
};

void scan_op_type(json::Scanner& s, std::string_view& type) {
    if (s.consume('[')) {
        s.read_string(type);
        while (!s.failed() && s.consume(',')) s.next_value();
        s.expect(']');
        return;
    }
    if (!s.expect('{') || s.consume('}')) return;
    do {
        std::string_view key;
        if (!s.read_string(key) || !s.expect(':')) return;
        if (key == "type") {
            s.read_string(type);
            constexpr std::string_view kSuffix = "_operation";
            if (type.size() > kSuffix.size() && type.substr(type.size() - kSuffix.size()) == kSuffix) {
                type.remove_suffix(kSuffix.size());
            }
        } else {
            s.next_value();
        }
    } while (!s.failed() && s.consume(','));
    s.expect('}');
}

void scan_entry_list(json::Scanner& s, std::string_view text, ScannedResponse& response) {
    if (!s.expect('[') || s.consume(']')) return;
    do {
        if (!s.expect('{')) return;
        const std::size_t start = s.position() - 1;
        RawEntry entry;
        bool has_block = false;
        if (!s.consume('}')) {
            do {
                std::string_view key;
                if (!s.read_string(key) || !s.expect(':')) return;
                if (key == "block") {
                    auto block = json::integer_value(s.next_value());
                    has_block = block.ok();
                    if (has_block) entry.block = *block;
                } else if (key == "virtual_op") {
                    const std::string_view value = s.next_value();
                    auto number = json::integer_value(value);
                    entry.node_virtual_flag = value == "true" || (number && *number > 0);
                } else if (key == "op") {
                    scan_op_type(s, entry.type);
                } else {
                    s.next_value();
                }
            } while (!s.failed() && s.consume(','));
            if (!s.expect('}')) return;
        }
        entry.text = text.substr(start, s.position() - start);
        if ((!has_block || entry.type.empty()) && response.problem.empty()) {
            response.problem = "an operation entry lacks 'block' or 'op'";
        }
        response.entries.push_back(entry);
    } while (!s.failed() && s.consume(','));
    s.expect(']');
}

ScannedResponse scan_response(json::Scanner& s, std::string_view text, OpsForm form) {
    ScannedResponse response;
    if (!s.expect('{') || s.consume('}')) return response;
    do {
        std::string_view key;
        if (!s.read_string(key) || !s.expect(':')) return response;
        if (key == "id") {
            if (auto id = json::integer_value(s.next_value())) response.id = *id;
        } else if (key == "result") {
            response.has_result = true;
            if (form == OpsForm::Condenser) {
                scan_entry_list(s, text, response);
            } else if (s.expect('{') && !s.consume('}')) {
                do {
                    std::string_view member;
                    if (!s.read_string(member) || !s.expect(':')) return response;
                    if (member == "ops") {
                        scan_entry_list(s, text, response);
                    } else {
                        s.next_value();
                    }
                } while (!s.failed() && s.consume(','));
                s.expect('}');
            }
        } else if (key == "error") {
            const std::string_view value = s.next_value();
            if (value != "null") response.error = value;
        } else {
            s.next_value();
        }
    } while (!s.failed() && s.consume(','));
    s.expect('}');
    return response;
}

struct Header {
    std::string previous;
    Timestamp time;
};

// A block_api.get_block_header result: nullopt for an unknown block ({}).
Attempt<std::optional<Header>> header_of(const json_t* result, std::int64_t block_num) {
    const json_t* header = json_object_get(result, "header");
    if (!json_is_object(result)) return Attempt<std::optional<Header>>::fail(NodeFailure::Malformed, "header result is not an object");
    if (header == nullptr || json_is_null(header)) return Attempt<std::optional<Header>>::ok(std::nullopt);
    const auto previous = json::string_view_of(json_object_get(header, "previous"));
    const auto time_text = json::string_view_of(json_object_get(header, "timestamp"));
    if (!previous || !time_text) return Attempt<std::optional<Header>>::fail(NodeFailure::Malformed, "header lacks previous or timestamp");
    if (!is_block_id_of(*previous, block_num - 1)) {
        return Attempt<std::optional<Header>>::fail(NodeFailure::WrongAnswer,
                                                    "header of block " + std::to_string(block_num) + " is not that block's");
    }
    auto time = Timestamp::parse(*time_text);
    if (!time) return Attempt<std::optional<Header>>::fail(NodeFailure::Malformed, "header timestamp: " + time.error());
    return Attempt<std::optional<Header>>::ok(Header{std::string(*previous), *time});
}

}  // namespace

struct NodeClient::Impl {
    NodeClientOptions options;
    CurlPtr curl;
    CurlSlistPtr headers;
    NodeClientStats stats;
    NodeFailure last_failure = NodeFailure::None;
    std::uint64_t next_id = 1;
    std::mt19937_64 random{std::random_device{}()};

    // One HTTP POST of a JSON body; the answer's text.
    Attempt<std::string> post_text(const std::string& body) {
        ++stats.attempts;
        std::string received;
        ReceiveState state{&received, static_cast<std::size_t>(options.max_response_bytes)};
        CURL* c = curl.get();
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body.c_str());
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
        curl_easy_setopt(c, CURLOPT_WRITEDATA, &state);
        curl_easy_setopt(c, CURLOPT_XFERINFODATA, &options.stop);
        const CURLcode code = curl_easy_perform(c);
        stats.bytes_received += received.size();
        if (code != CURLE_OK) {
            if (state.oversized || code == CURLE_FILESIZE_EXCEEDED) {
                return Attempt<std::string>::fail(NodeFailure::Oversized, "response larger than " +
                                                                          std::to_string(options.max_response_bytes) + " bytes");
            }
            if (code == CURLE_ABORTED_BY_CALLBACK) return Attempt<std::string>::fail(NodeFailure::Stopped, "stopped");
            if (code == CURLE_OPERATION_TIMEDOUT) {
                return Attempt<std::string>::fail(NodeFailure::Timeout,
                                              "no complete answer within " + std::to_string(options.timeout.count()) + " ms");
            }
            if (code == CURLE_PARTIAL_FILE) return Attempt<std::string>::fail(NodeFailure::Malformed, "truncated response");
            return Attempt<std::string>::fail(NodeFailure::Transport, curl_easy_strerror(code));
        }
        long status = 0;
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
        if (status != 200) return Attempt<std::string>::fail(NodeFailure::HttpStatus, "HTTP status " + std::to_string(status));
        return Attempt<std::string>::ok(std::move(received));
    }

    // One HTTP POST of a JSON body; the parsed JSON answer.
    Attempt<JsonPtr> post(const std::string& body) {
        auto text = post_text(body);
        if (!text.value) return forward_failure<JsonPtr>(text);
        auto parsed = json::parse(*text.value);
        if (!parsed) return Attempt<JsonPtr>::fail(NodeFailure::Malformed, parsed.error());
        return Attempt<JsonPtr>::ok(std::move(parsed).value());
    }

    // One JSON-RPC call: its result.
    Attempt<JsonPtr> single(const std::string& method, JsonPtr params) {
        const std::uint64_t id = next_id++;
        auto answer = post(json::dump_compact(request_object(method, params.get(), id).get()));
        if (!answer.value) return answer;
        return result_of(answer.value->get(), id);
    }

    // A JSON-RPC batch: the results in request order.
    Attempt<std::vector<JsonPtr>> batch(const std::vector<std::pair<std::string, JsonPtr>>& calls) {
        JsonPtr requests = json_own(json_array());
        const std::uint64_t first_id = next_id;
        for (const auto& [method, params] : calls) json_array_append_new(requests.get(), request_object(method, params.get(), next_id++).release());
        auto answer = post(json::dump_compact(requests.get()));
        if (!answer.value) return forward_failure<std::vector<JsonPtr>>(answer);
        json_t* responses = answer.value->get();
        if (json_is_object(responses)) {
            // A whole-batch error answer.
            auto single = result_of(responses, first_id);
            return Attempt<std::vector<JsonPtr>>::fail(single.value ? NodeFailure::Malformed : single.failure,
                                                       single.value ? "batch answered with one object" : single.message);
        }
        if (!json_is_array(responses) || json_array_size(responses) != calls.size()) {
            return Attempt<std::vector<JsonPtr>>::fail(NodeFailure::WrongAnswer, "batch answer does not match the request count");
        }
        // Answers may come in any order: placed by id.
        std::vector<JsonPtr> results(calls.size());
        for (std::size_t i = 0; i < calls.size(); ++i) {
            json_t* response = json_array_get(responses, i);
            auto id = json::to_int64(json_object_get(response, "id"));
            if (!id || *id < static_cast<std::int64_t>(first_id) || *id >= static_cast<std::int64_t>(first_id + calls.size())) {
                if (const json_t* error = json_object_get(response, "error"); error != nullptr && !json_is_null(error)) {
                    return Attempt<std::vector<JsonPtr>>::fail(NodeFailure::RpcError, rpc_error_text(error));
                }
                return Attempt<std::vector<JsonPtr>>::fail(NodeFailure::WrongAnswer, "batch answer with an unknown id");
            }
            const auto slot = static_cast<std::size_t>(static_cast<std::uint64_t>(*id) - first_id);
            if (results[slot]) return Attempt<std::vector<JsonPtr>>::fail(NodeFailure::WrongAnswer, "batch answer id repeated");
            auto result = result_of(response, static_cast<std::uint64_t>(*id));
            if (!result.value) return forward_failure<std::vector<JsonPtr>>(result);
            results[slot] = std::move(*result.value);
        }
        return Attempt<std::vector<JsonPtr>>::ok(std::move(results));
    }

    // A batch answered with one object: a whole-batch error.
    template <typename T>
    Attempt<T> whole_batch_failure(const std::string& text, std::uint64_t first_id) {
        auto parsed = json::parse(text);
        if (!parsed) return Attempt<T>::fail(NodeFailure::Malformed, parsed.error());
        auto single = result_of(parsed->get(), first_id);
        return Attempt<T>::fail(single.value ? NodeFailure::Malformed : single.failure,
                                single.value ? "batch answered with one object" : single.message);
    }

    std::chrono::milliseconds backoff(int attempt) {
        auto base = options.initial_backoff;
        for (int i = 1; i < attempt && base < options.max_backoff; ++i) base *= 2;
        base = std::min(base, options.max_backoff);
        // Half fixed, half random: spread retries of several clients apart.
        std::uniform_int_distribution<std::int64_t> jitter(0, base.count() / 2);
        return std::chrono::milliseconds(base.count() - base.count() / 2 + jitter(random));
    }

    // Runs an attempt until it succeeds, attempts run out, or stop is requested.
    template <typename T>
    Result<T> with_retries(const std::string& what, const std::function<Attempt<T>()>& attempt_once) {
        ++stats.calls;
        std::string last_message;
        for (int attempt = 1; attempt <= options.max_attempts; ++attempt) {
            if (options.stop.stop_requested()) break;
            Attempt<T> outcome = attempt_once();
            if (outcome.value) {
                last_failure = NodeFailure::None;
                return std::move(*outcome.value);
            }
            last_failure = outcome.failure;
            ++stats.failures[static_cast<int>(outcome.failure)];
            last_message = outcome.message;
            if (outcome.failure == NodeFailure::Stopped) break;
            if (attempt < options.max_attempts && !interruptible_sleep(backoff(attempt), options.stop)) break;
        }
        ++stats.failed_calls;
        if (options.stop.stop_requested()) {
            last_failure = NodeFailure::Stopped;
            return make_error(what + ": stopped");
        }
        return make_error(what + " failed after " + std::to_string(options.max_attempts) + " attempts: " + last_message);
    }

    Attempt<std::vector<BlockOps>> ops_attempt(std::int64_t first, std::int64_t last, OpsForm form) {
        JsonPtr requests = json_own(json_array());
        const std::uint64_t first_id = next_id;
        for (std::int64_t n = first; n <= last; ++n) {
            JsonPtr params = form == OpsForm::Condenser
                                 ? json_own(json_pack("[I, b]", static_cast<json_int_t>(n), 0))
                                 : json_own(json_pack("{s:I, s:b, s:b}", "block_num", static_cast<json_int_t>(n),
                                                      "only_virtual", 0, "include_reversible", 1));
            const char* method =
                form == OpsForm::Condenser ? "condenser_api.get_ops_in_block" : "account_history_api.get_ops_in_block";
            json_array_append_new(requests.get(), request_object(method, params.get(), next_id++).release());
        }
        const auto count = static_cast<std::size_t>(last - first + 1);
        auto answer = post_text(json::dump_compact(requests.get()));
        if (!answer.value) return forward_failure<std::vector<BlockOps>>(answer);
        auto text = std::make_shared<const std::string>(std::move(*answer.value));
        if (const auto start = text->find_first_not_of(" \t\r\n"); start != std::string::npos && (*text)[start] == '{') {
            return whole_batch_failure<std::vector<BlockOps>>(*text, first_id);
        }

        json::Scanner s(*text);
        std::vector<ScannedResponse> responses;
        if (s.expect('[') && !s.consume(']')) {
            do {
                responses.push_back(scan_response(s, *text, form));
            } while (!s.failed() && s.consume(','));
            s.expect(']');
        }
        if (s.failed()) return Attempt<std::vector<BlockOps>>::fail(NodeFailure::Malformed, s.error());
        if (!s.at_end()) return Attempt<std::vector<BlockOps>>::fail(NodeFailure::Malformed, "JSON: text after the answer");
        if (responses.size() != count) {
            return Attempt<std::vector<BlockOps>>::fail(NodeFailure::WrongAnswer, "batch answer does not match the request count");
        }
        std::vector<BlockOps> blocks(count);
        for (auto& response : responses) {
            if (!response.error.empty()) {
                auto parsed = json::parse(response.error);
                return Attempt<std::vector<BlockOps>>::fail(NodeFailure::RpcError,
                                                            parsed ? rpc_error_text(parsed->get()) : std::string("JSON-RPC error"));
            }
            if (!response.id || *response.id < static_cast<std::int64_t>(first_id) ||
                *response.id >= static_cast<std::int64_t>(first_id + count)) {
                return Attempt<std::vector<BlockOps>>::fail(NodeFailure::WrongAnswer, "batch answer with an unknown id");
            }
            const auto slot = static_cast<std::size_t>(*response.id - static_cast<std::int64_t>(first_id));
            const std::int64_t block_num = first + static_cast<std::int64_t>(slot);
            const std::string what = "get_ops_in_block(" + std::to_string(block_num) + ")";
            if (blocks[slot].block_num != 0) return Attempt<std::vector<BlockOps>>::fail(NodeFailure::WrongAnswer, "batch answer id repeated");
            if (!response.has_result) return Attempt<std::vector<BlockOps>>::fail(NodeFailure::Malformed, what + " has no result");
            if (!response.problem.empty()) return Attempt<std::vector<BlockOps>>::fail(NodeFailure::Malformed, what + ": " + response.problem);
            for (const auto& entry : response.entries) {
                if (entry.block != block_num) {
                    return Attempt<std::vector<BlockOps>>::fail(
                        NodeFailure::WrongAnswer, what + " answered an operation of block " + std::to_string(entry.block));
                }
            }
            blocks[slot] = BlockOps{block_num, std::move(response.entries), text};
        }
        return Attempt<std::vector<BlockOps>>::ok(std::move(blocks));
    }

    Attempt<BlockRefRange> refs_attempt(std::int64_t first, std::int64_t last) {
        std::vector<std::pair<std::string, JsonPtr>> calls;
        for (std::int64_t n = first; n <= last + 1; ++n) {
            calls.emplace_back("block_api.get_block_header", json_own(json_pack("{s:I}", "block_num", static_cast<json_int_t>(n))));
        }
        auto answers = batch(calls);
        if (!answers.value) return forward_failure<BlockRefRange>(answers);
        std::vector<Header> block_headers;
        std::optional<Header> after_last;
        for (std::size_t i = 0; i < answers.value->size(); ++i) {
            const std::int64_t n = first + static_cast<std::int64_t>(i);
            auto header = header_of((*answers.value)[i].get(), n);
            if (!header.value) return forward_failure<BlockRefRange>(header);
            if (n == last + 1) {
                after_last = std::move(*header.value);
            } else if (!*header.value) {
                return Attempt<BlockRefRange>::fail(NodeFailure::WrongAnswer, "node has no block " + std::to_string(n));
            } else {
                block_headers.push_back(std::move(**header.value));
            }
        }
        if (block_headers.empty()) return Attempt<BlockRefRange>::fail(NodeFailure::WrongAnswer, "no headers");
        BlockRefRange range;
        range.parent_id = block_headers.front().previous;
        for (std::size_t i = 0; i < block_headers.size(); ++i) {
            const std::int64_t n = first + static_cast<std::int64_t>(i);
            range.blocks.push_back(BlockRef{n, i + 1 < block_headers.size() ? block_headers[i + 1].previous : std::string(), block_headers[i].time});
        }
        if (after_last) {
            range.blocks.back().id = after_last->previous;
        } else {
            // `last` is the head: its own id from the block itself.
            auto answer = single("block_api.get_block_range",
                                 json_own(json_pack("{s:I, s:i}", "starting_block_num", static_cast<json_int_t>(last), "count", 1)));
            if (!answer.value) return forward_failure<BlockRefRange>(answer);
            const json_t* block = json_array_get(json_object_get(answer.value->get(), "blocks"), 0);
            const auto id = json::string_view_of(json_object_get(block, "block_id"));
            if (!id || !is_block_id_of(*id, last)) {
                return Attempt<BlockRefRange>::fail(NodeFailure::WrongAnswer, "no id for block " + std::to_string(last));
            }
            range.blocks.back().id = std::string(*id);
        }
        return Attempt<BlockRefRange>::ok(std::move(range));
    }

    Attempt<ChainHead> head_attempt() {
        auto answer = single("database_api.get_dynamic_global_properties", json_own(json_object()));
        if (!answer.value) return forward_failure<ChainHead>(answer);
        const json_t* props = answer.value->get();
        auto head = json::to_int64(json_object_get(props, "head_block_number"));
        const auto head_id = json::string_view_of(json_object_get(props, "head_block_id"));
        const auto time_text = json::string_view_of(json_object_get(props, "time"));
        if (!head || *head < 0 || !head_id || !time_text) {
            return Attempt<ChainHead>::fail(NodeFailure::Malformed, "dynamic global properties lack head_block_number, head_block_id or time");
        }
        auto time = Timestamp::parse(*time_text);
        if (!time) return Attempt<ChainHead>::fail(NodeFailure::Malformed, "dynamic global properties time: " + time.error());
        ChainHead result{*head, std::string(*head_id), *time, std::nullopt};
        const json_t* lib = json_object_get(props, "last_irreversible_block_num");
        if (lib != nullptr && !json_is_null(lib)) {
            auto number = json::to_int64(lib);
            if (!number || *number < 0 || *number > *head) {
                return Attempt<ChainHead>::fail(NodeFailure::Malformed, "last_irreversible_block_num is not a block up to head");
            }
            if (*number > 0) result.last_irreversible = *number;
        }
        return Attempt<ChainHead>::ok(std::move(result));
    }
};

NodeClient::NodeClient(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
NodeClient::NodeClient(NodeClient&&) noexcept = default;
NodeClient& NodeClient::operator=(NodeClient&&) noexcept = default;
NodeClient::~NodeClient() = default;

Result<NodeClient> NodeClient::create(NodeClientOptions options) {
    static const CURLcode global = curl_global_init(CURL_GLOBAL_DEFAULT);
    if (global != CURLE_OK) return make_error("libcurl initialisation failed");
    if (options.max_attempts < 1) return make_error("node client: max_attempts must be at least 1");
    auto impl = std::make_unique<Impl>();
    impl->options = std::move(options);
    impl->curl.reset(curl_easy_init());
    if (!impl->curl) return make_error("libcurl: cannot create a handle");
    impl->headers.reset(curl_slist_append(nullptr, "Content-Type: application/json"));
    impl->headers.reset(curl_slist_append(impl->headers.release(), "Expect:"));
    CURL* c = impl->curl.get();
    curl_easy_setopt(c, CURLOPT_URL, impl->options.url.c_str());
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, impl->headers.get());
    curl_easy_setopt(c, CURLOPT_POST, 1L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, static_cast<long>(impl->options.timeout.count()));
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(impl->options.timeout.count()));
    curl_easy_setopt(c, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(c, CURLOPT_ACCEPT_ENCODING, "");  // whatever compression the node offers
    curl_easy_setopt(c, CURLOPT_MAXFILESIZE_LARGE, static_cast<curl_off_t>(impl->options.max_response_bytes));
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, receive);
    curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, progress);
    return NodeClient(std::move(impl));
}

Result<ChainHead> NodeClient::get_dynamic_global_properties() {
    return impl_->with_retries<ChainHead>("get_dynamic_global_properties", [this] { return impl_->head_attempt(); });
}

Result<std::vector<BlockOps>> NodeClient::get_ops_in_blocks(std::int64_t first, std::int64_t last, OpsForm form) {
    if (first < 1 || last < first) return make_error("get_ops_in_block: empty block range");
    const std::string what = "get_ops_in_block " + std::to_string(first) + ".." + std::to_string(last);
    auto blocks = impl_->with_retries<std::vector<BlockOps>>(what, [&] { return impl_->ops_attempt(first, last, form); });
    if (!blocks || form != OpsForm::Condenser) return blocks;
    // The condenser form answers [] for blocks it deems reversible: an empty
    // block is asked again in the form that shows reversible blocks too.
    for (auto& block : blocks.value()) {
        if (!block.entries.empty()) continue;
        const std::int64_t n = block.block_num;
        auto again = impl_->with_retries<std::vector<BlockOps>>(
            "get_ops_in_block " + std::to_string(n), [&] { return impl_->ops_attempt(n, n, OpsForm::AccountHistory); });
        if (!again) return make_error(again.error());
        block = std::move(again.value().front());
    }
    return blocks;
}

Result<BlockRefRange> NodeClient::get_block_refs(std::int64_t first, std::int64_t last) {
    if (first < 1 || last < first) return make_error("get_block_header: empty block range");
    const std::string what = "block ids " + std::to_string(first) + ".." + std::to_string(last);
    return impl_->with_retries<BlockRefRange>(what, [&] { return impl_->refs_attempt(first, last); });
}

Result<JsonPtr> NodeClient::call(const std::string& method, JsonPtr params) {
    return impl_->with_retries<JsonPtr>(method, [&] { return impl_->single(method, json_ref(params.get())); });
}

const NodeClientStats& NodeClient::stats() const noexcept { return impl_->stats; }
NodeFailure NodeClient::last_failure() const noexcept { return impl_->last_failure; }

}  // namespace wallet
