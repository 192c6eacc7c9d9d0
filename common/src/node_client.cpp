#include "wallet/node_client.hpp"

#include <condition_variable>
#include <cstdio>
#include <functional>
#include <map>
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
    // The node refused the batch for its size; the limit it named (0: none).
    std::optional<int> batch_refused;

    static Attempt ok(T v) { return Attempt{std::move(v), NodeFailure::None, {}, {}}; }
    static Attempt fail(NodeFailure kind, std::string why) { return Attempt{std::nullopt, kind, std::move(why), {}}; }
};

template <typename T, typename U>
Attempt<T> forward_failure(const Attempt<U>& failed) {
    Attempt<T> forwarded = Attempt<T>::fail(failed.failure, failed.message);
    forwarded.batch_refused = failed.batch_refused;
    return forwarded;
}

// The number that follows `marker` in `text`.
std::optional<int> number_after(std::string_view text, std::string_view marker) {
    const auto at = text.find(marker);
    if (at == std::string_view::npos) return std::nullopt;
    int value = 0;
    bool digits = false;
    for (std::size_t i = at + marker.size(); i < text.size() && text[i] >= '0' && text[i] <= '9' && value < 1000000; ++i) {
        value = value * 10 + (text[i] - '0');
        digits = true;
    }
    return digits ? std::optional<int>(value) : std::nullopt;
}

// A proxy's refusal of a batch for its size, and the limit it names (0 when
// it names none): Drone "Batch size too large, maximum allowed is 100." (HTTP
// 500), jussi 1600 "JSONRPC batch size of 101 exceeds 50", proxyd -32014
// "too many RPC calls in batch request".
std::optional<int> batch_refusal(std::string_view text) {
    if (text.find("Batch size too large") != std::string_view::npos) return number_after(text, "maximum allowed is ").value_or(0);
    if (text.find("batch size of") != std::string_view::npos) return number_after(text, " exceeds ").value_or(0);
    if (text.find("too many RPC calls in batch") != std::string_view::npos) return 0;
    return std::nullopt;
}

// The start of an error body, on one line, for log messages.
std::string body_excerpt(std::string_view body) {
    std::string text;
    for (const char c : body.substr(0, 300)) text += (c == '\r' || c == '\n' || c == '\t') ? ' ' : c;
    if (body.size() > 300) text += "...";
    return text;
}

struct ReceiveState {
    std::string* body;
    std::size_t limit;
    CURL* curl;
    bool oversized = false;
};

std::size_t receive(char* data, std::size_t size, std::size_t count, void* user) {
    auto* state = static_cast<ReceiveState*>(user);
    const std::size_t bytes = size * count;
    if (state->body->size() + bytes > state->limit) {
        state->oversized = true;
        return 0;  // aborts the transfer
    }
    if (state->body->empty()) {
        // The whole answer's room at once when its length is announced: a
        // batch answer of megabytes is not regrown (and copied) twenty times.
        curl_off_t length = -1;
        if (curl_easy_getinfo(state->curl, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &length) == CURLE_OK && length > 0 &&
            static_cast<std::size_t>(length) <= state->limit) {
            state->body->reserve(static_cast<std::size_t>(length));
        }
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

// A node's Retry-After, shared by every client of the process that talks to
// it: a proxy limits by address, not by connection.
class NodeTurns {
public:
    static std::chrono::steady_clock::time_point not_before(const std::string& url) {
        std::lock_guard lock(mutex());
        auto it = turns().find(url);
        return it == turns().end() ? std::chrono::steady_clock::time_point{} : it->second;
    }
    static void defer(const std::string& url, std::chrono::steady_clock::time_point until) {
        std::lock_guard lock(mutex());
        auto& turn = turns()[url];
        turn = std::max(turn, until);
    }

private:
    static std::mutex& mutex() {
        static std::mutex m;
        return m;
    }
    static std::map<std::string, std::chrono::steady_clock::time_point>& turns() {
        static std::map<std::string, std::chrono::steady_clock::time_point> t;
        return t;
    }
};

}  // namespace

struct NodeClient::Impl {
    NodeClientOptions options;
    CurlPtr curl;
    CurlSlistPtr headers;
    NodeClientStats stats;
    NodeFailure last_failure = NodeFailure::None;
    std::uint64_t next_id = 1;
    std::mt19937_64 random{std::random_device{}()};
    int batch_limit = 1000;
    // The largest batch the node has not refused; a limit cut after timeouts
    // grows back towards it, doubling after every kGrowAfter good batches.
    int batch_ceiling = 1000;
    int good_batches = 0;
    static constexpr int kGrowAfter = 20;
    // Set by with_retries when a batch must be cut smaller (refused or timed out).
    bool cut_batch = false;
    int batch_in_flight = 1;
    // Pacing after HTTP 429: no request before not_before, and at least
    // `pace` between requests, doubled by every 429 and eased by successes.
    std::chrono::steady_clock::time_point not_before{};
    std::chrono::steady_clock::time_point last_sent{};
    std::chrono::milliseconds pace{0};
    // The first block seen with a producer_reward (every_block_rewarded).
    std::optional<std::int64_t> first_rewarded;

    bool wait_turn() {
        const auto now = std::chrono::steady_clock::now();
        not_before = std::max(not_before, NodeTurns::not_before(options.url));
        const auto turn = std::max(not_before, last_sent + pace);
        if (turn > now && !interruptible_sleep(std::chrono::ceil<std::chrono::milliseconds>(turn - now), options.stop)) return false;
        last_sent = std::chrono::steady_clock::now();
        return true;
    }

    void throttled(long retry_after_seconds) {
        pace = std::clamp(pace * 2, std::chrono::milliseconds(50), std::chrono::milliseconds(5000));
        const auto wait = retry_after_seconds > 0 ? std::chrono::milliseconds(retry_after_seconds * 1000) : pace;
        not_before = std::max(not_before, std::chrono::steady_clock::now() + wait);
        NodeTurns::defer(options.url, not_before);
    }

    // One HTTP POST of a JSON body; the answer's text.
    Attempt<std::string> post_text(const std::string& body) {
        if (!wait_turn()) return Attempt<std::string>::fail(NodeFailure::Stopped, "stopped");
        ++stats.attempts;
        std::string received;
        CURL* c = curl.get();
        ReceiveState state{&received, static_cast<std::size_t>(options.max_response_bytes), c};
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
        if (status == 429) {
            curl_off_t retry_after = 0;
            curl_easy_getinfo(c, CURLINFO_RETRY_AFTER, &retry_after);
            throttled(static_cast<long>(retry_after));
            return Attempt<std::string>::fail(NodeFailure::HttpStatus, "HTTP status 429 (rate limited; Retry-After " +
                                                                           std::to_string(retry_after) + " s): " + body_excerpt(received));
        }
        if (status != 200) {
            auto failed = Attempt<std::string>::fail(NodeFailure::HttpStatus,
                                                     "HTTP status " + std::to_string(status) + ": " + body_excerpt(received));
            failed.batch_refused = batch_refusal(received);
            return failed;
        }
        pace = pace * 15 / 16;
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

    // A batch answered with one object: a whole-batch error.
    template <typename T>
    Attempt<T> whole_batch_failure(const std::string& text, std::uint64_t first_id) {
        auto parsed = json::parse(text);
        if (!parsed) return Attempt<T>::fail(NodeFailure::Malformed, parsed.error());
        auto single = result_of(parsed->get(), first_id);
        auto failed = Attempt<T>::fail(single.value ? NodeFailure::Malformed : single.failure,
                                       single.value ? "batch answered with one object" : single.message);
        if (!single.value) failed.batch_refused = batch_refusal(single.message);
        return failed;
    }

    std::chrono::milliseconds backoff(int attempt) {
        auto base = options.initial_backoff;
        for (int i = 1; i < attempt && base < options.max_backoff; ++i) base *= 2;
        base = std::min(base, options.max_backoff);
        // Half fixed, half random: spread retries of several clients apart.
        std::uniform_int_distribution<std::int64_t> jitter(0, base.count() / 2);
        return std::chrono::milliseconds(base.count() - base.count() / 2 + jitter(random));
    }

    // Runs an attempt until it succeeds, attempts run out, or stop is
    // requested. A batch refused for its size, or of several items timing out,
    // returns at once with cut_batch set and batch_limit lowered: the caller
    // cuts it smaller.
    template <typename T>
    Result<T> with_retries(const std::string& what, const std::function<Attempt<T>()>& attempt_once) {
        ++stats.calls;
        cut_batch = false;
        std::string last_message;
        for (int attempt = 1; attempt <= options.max_attempts; ++attempt) {
            if (options.stop.stop_requested()) break;
            Attempt<T> outcome = attempt_once();
            if (outcome.value) {
                last_failure = NodeFailure::None;
                if (batch_in_flight > 1 && batch_limit < batch_ceiling && ++good_batches >= kGrowAfter) {
                    batch_limit = std::min(batch_ceiling, batch_limit * 2);
                    good_batches = 0;
                }
                return std::move(*outcome.value);
            }
            last_failure = outcome.failure;
            ++stats.failures[static_cast<int>(outcome.failure)];
            last_message = outcome.message;
            if (outcome.failure == NodeFailure::Stopped) break;
            const bool refused = outcome.batch_refused && batch_in_flight > 1;
            if (refused || (outcome.failure == NodeFailure::Timeout && batch_in_flight > 1)) {
                const int named = outcome.batch_refused.value_or(0);
                batch_limit = std::max(1, named > 0 && named < batch_in_flight ? named : batch_in_flight / 2);
                if (refused) batch_ceiling = batch_limit;
                good_batches = 0;
                cut_batch = true;
                return make_error(what + ": " + last_message + "; batches cut to " + std::to_string(batch_limit));
            }
            if (attempt < options.max_attempts && !interruptible_sleep(backoff(attempt), options.stop)) break;
        }
        ++stats.failed_calls;
        if (options.stop.stop_requested()) {
            last_failure = NodeFailure::Stopped;
            return make_error(what + ": stopped");
        }
        return make_error(what + " failed after " + std::to_string(options.max_attempts) + " attempts: " + last_message);
    }

    // get_ops_in_block for [first, last] in one batch; with `known_to`, an
    // empty answer is accepted only as get_ops_in_blocks documents.
    Attempt<std::vector<BlockOps>> ops_attempt(std::int64_t first, std::int64_t last, OpsForm form,
                                               std::optional<std::int64_t> known_to) {
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
        if (options.every_block_rewarded) {
            for (const auto& block : blocks) {
                if (first_rewarded && *first_rewarded <= block.block_num) break;
                const bool rewarded = std::any_of(block.entries.begin(), block.entries.end(),
                                                  [](const RawEntry& entry) { return entry.type == "producer_reward"; });
                if (rewarded) first_rewarded = block.block_num;
            }
        }
        for (const auto& block : blocks) {
            if (!known_to || !block.entries.empty()) continue;
            const std::string what = "node answered no operations for block " + std::to_string(block.block_num);
            if (block.block_num > *known_to) {
                return Attempt<std::vector<BlockOps>>::fail(NodeFailure::WrongAnswer,
                                                            what + ", above the block it reported (" + std::to_string(*known_to) + ")");
            }
            if (first_rewarded && *first_rewarded < block.block_num) {
                return Attempt<std::vector<BlockOps>>::fail(
                    NodeFailure::WrongAnswer, what + " although every block after " + std::to_string(*first_rewarded) +
                                                  " carries a producer_reward: not indexed there yet");
            }
        }
        return Attempt<std::vector<BlockOps>>::ok(std::move(blocks));
    }

    // block_api.get_block_range for [first, last]: each block's id,
    // `previous` and time, scanned without parsing the transactions.
    Attempt<BlockRefRange> refs_attempt(std::int64_t first, std::int64_t last) {
        const std::uint64_t id = next_id++;
        JsonPtr params = json_own(json_pack("{s:I, s:I}", "starting_block_num", static_cast<json_int_t>(first), "count",
                                            static_cast<json_int_t>(last - first + 1)));
        auto answer = post_text(json::dump_compact(request_object("block_api.get_block_range", params.get(), id).get()));
        if (!answer.value) return forward_failure<BlockRefRange>(answer);
        const std::string& text = *answer.value;
        json::Scanner s(text);
        BlockRefRange range;
        std::optional<std::int64_t> answered_id;
        std::string_view error;
        bool has_result = false;
        std::string problem;
        auto scan_block = [&](std::int64_t n) {
            std::string_view block_id, previous, timestamp;
            std::vector<std::string> transactions;
            if (!s.expect('{') || s.consume('}')) return;
            do {
                std::string_view key;
                if (!s.read_string(key) || !s.expect(':')) return;
                if (key == "block_id") {
                    s.read_string(block_id);
                } else if (key == "previous") {
                    s.read_string(previous);
                } else if (key == "timestamp") {
                    s.read_string(timestamp);
                } else if (key == "transaction_ids") {
                    if (s.expect('[') && !s.consume(']')) {
                        do {
                            std::string_view transaction;
                            if (s.read_string(transaction)) transactions.emplace_back(transaction);
                        } while (!s.failed() && s.consume(','));
                        s.expect(']');
                    }
                } else {
                    s.next_value();
                }
            } while (!s.failed() && s.consume(','));
            if (!s.expect('}') || !problem.empty()) return;
            auto time = Timestamp::parse(timestamp);
            if (!is_block_id_of(block_id, n) || !is_block_id_of(previous, n - 1) || !time) {
                problem = "block " + std::to_string(n) + " of the range is not that block's, or lacks its id or time";
                return;
            }
            if (n == first) range.parent_id = std::string(previous);
            else if (range.blocks.back().id != previous) problem = "block " + std::to_string(n) + " does not follow its predecessor";
            range.blocks.push_back(BlockRef{n, std::string(block_id), *time});
            range.transaction_ids.push_back(std::move(transactions));
        };
        if (s.expect('{') && !s.consume('}')) {
            do {
                std::string_view key;
                if (!s.read_string(key) || !s.expect(':')) break;
                if (key == "id") {
                    if (auto number = json::integer_value(s.next_value())) answered_id = *number;
                } else if (key == "error") {
                    const std::string_view value = s.next_value();
                    if (value != "null") error = value;
                } else if (key == "result" && s.expect('{') && !s.consume('}')) {
                    has_result = true;
                    do {
                        std::string_view member;
                        if (!s.read_string(member) || !s.expect(':')) break;
                        if (member == "blocks" && s.expect('[') && !s.consume(']')) {
                            do {
                                scan_block(first + static_cast<std::int64_t>(range.blocks.size()));
                            } while (!s.failed() && s.consume(','));
                            s.expect(']');
                        } else if (member != "blocks") {
                            s.next_value();
                        }
                    } while (!s.failed() && s.consume(','));
                    s.expect('}');
                } else {
                    s.next_value();
                }
            } while (!s.failed() && s.consume(','));
            s.expect('}');
        }
        if (s.failed()) return Attempt<BlockRefRange>::fail(NodeFailure::Malformed, s.error());
        if (!error.empty()) {
            auto parsed = json::parse(error);
            return Attempt<BlockRefRange>::fail(NodeFailure::RpcError, parsed ? rpc_error_text(parsed->get()) : "JSON-RPC error");
        }
        if (!answered_id || static_cast<std::uint64_t>(*answered_id) != id) {
            return Attempt<BlockRefRange>::fail(NodeFailure::WrongAnswer, "response id does not match the request");
        }
        if (!has_result) return Attempt<BlockRefRange>::fail(NodeFailure::Malformed, "response has no result");
        if (!problem.empty()) return Attempt<BlockRefRange>::fail(NodeFailure::WrongAnswer, problem);
        if (range.blocks.size() != static_cast<std::size_t>(last - first + 1)) {
            return Attempt<BlockRefRange>::fail(NodeFailure::WrongAnswer,
                                                "node has no block " + std::to_string(first + static_cast<std::int64_t>(range.blocks.size())));
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
    if (options.max_batch < 1) return make_error("node client: max_batch must be at least 1");
    impl->options = std::move(options);
    impl->batch_limit = impl->options.max_batch;
    impl->batch_ceiling = impl->options.max_batch;
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
    curl_easy_setopt(c, CURLOPT_USERAGENT, "hive-wallet/" WALLET_VERSION);  // operators of public nodes see who asks
    curl_easy_setopt(c, CURLOPT_MAXFILESIZE_LARGE, static_cast<curl_off_t>(impl->options.max_response_bytes));
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, receive);
    curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, progress);
    return NodeClient(std::move(impl));
}

Result<ChainHead> NodeClient::get_dynamic_global_properties() {
    return impl_->with_retries<ChainHead>("get_dynamic_global_properties", [this] { return impl_->head_attempt(); });
}

Result<std::vector<BlockOps>> NodeClient::get_ops_in_blocks(std::int64_t first, std::int64_t last, OpsForm form,
                                                         std::optional<std::int64_t> known_to) {
    if (first < 1 || last < first) return make_error("get_ops_in_block: empty block range");
    Impl& impl = *impl_;
    if (!known_to) {
        auto head = get_dynamic_global_properties();
        if (!head) return make_error(head.error());
        known_to = form == OpsForm::Condenser ? head->last_irreversible.value_or(0) : head->head_block;
    }
    // [from, to] in batches the node accepts, appended to `blocks`.
    auto read = [&](std::int64_t from, std::int64_t to, OpsForm asked, std::optional<std::int64_t> checked,
                    std::vector<BlockOps>& blocks) -> Result<bool> {
        while (from <= to) {
            const std::int64_t upto = std::min(to, from + impl.batch_limit - 1);
            impl.batch_in_flight = static_cast<int>(upto - from + 1);
            auto chunk = impl.with_retries<std::vector<BlockOps>>(
                "get_ops_in_block " + std::to_string(from) + ".." + std::to_string(upto),
                [&] { return impl.ops_attempt(from, upto, asked, checked); });
            impl.batch_in_flight = 1;
            if (!chunk && impl.cut_batch) continue;
            if (!chunk) return make_error(chunk.error());
            for (auto& block : chunk.value()) blocks.push_back(std::move(block));
            from = upto + 1;
        }
        return true;
    };
    std::vector<BlockOps> blocks;
    blocks.reserve(static_cast<std::size_t>(last - first + 1));
    // The condenser form's [] is checked below, in the other form.
    if (auto done = read(first, last, form, form == OpsForm::Condenser ? std::nullopt : known_to, blocks); !done) {
        return make_error(done.error());
    }
    if (form != OpsForm::Condenser) return blocks;
    // The condenser form answers [] for blocks it deems reversible: each run
    // of empty blocks is asked again in the form that shows reversible blocks too.
    for (std::size_t i = 0; i < blocks.size();) {
        if (!blocks[i].entries.empty()) {
            ++i;
            continue;
        }
        std::size_t end = i;
        while (end < blocks.size() && blocks[end].entries.empty()) ++end;
        std::vector<BlockOps> again;
        if (auto done = read(blocks[i].block_num, blocks[end - 1].block_num, OpsForm::AccountHistory, known_to, again); !done) {
            return make_error(done.error());
        }
        for (auto& block : again) blocks[i++] = std::move(block);
    }
    return blocks;
}

Result<BlockRefRange> NodeClient::get_block_refs(std::int64_t first, std::int64_t last) {
    if (first < 1 || last < first) return make_error("get_block_range: empty block range");
    constexpr std::int64_t kMaxBlockRange = 1000;  // hived's limit of block_api.get_block_range
    Impl& impl = *impl_;
    BlockRefRange range;
    std::int64_t count = std::min<std::int64_t>(kMaxBlockRange, last - first + 1);
    for (std::int64_t from = first; from <= last;) {
        const std::int64_t to = std::min(last, from + count - 1);
        impl.batch_in_flight = static_cast<int>(to - from + 1);
        auto chunk = impl.with_retries<BlockRefRange>("block ids " + std::to_string(from) + ".." + std::to_string(to),
                                                      [&] { return impl.refs_attempt(from, to); });
        impl.batch_in_flight = 1;
        if (!chunk && to > from && (impl.cut_batch || impl.last_failure == NodeFailure::Oversized)) {
            // Whole blocks: a range too large or too slow for one answer is read in halves.
            count = std::max<std::int64_t>(1, (to - from + 1) / 2);
            continue;
        }
        if (!chunk) return chunk;
        if (range.blocks.empty()) {
            range.parent_id = std::move(chunk->parent_id);
        } else if (chunk->parent_id != range.blocks.back().id) {
            return make_error("block ids " + std::to_string(first) + ".." + std::to_string(last) + ": block " +
                              std::to_string(from) + " does not follow its predecessor");
        }
        for (auto& block : chunk->blocks) range.blocks.push_back(std::move(block));
        for (auto& ids : chunk->transaction_ids) range.transaction_ids.push_back(std::move(ids));
        from = to + 1;
    }
    return range;
}

Result<JsonPtr> NodeClient::call(const std::string& method, JsonPtr params) {
    return impl_->with_retries<JsonPtr>(method, [&] { return impl_->single(method, json_ref(params.get())); });
}

const NodeClientStats& NodeClient::stats() const noexcept { return impl_->stats; }
NodeFailure NodeClient::last_failure() const noexcept { return impl_->last_failure; }
int NodeClient::batch_limit() const noexcept { return impl_->batch_limit; }
std::chrono::steady_clock::time_point NodeClient::not_before() const noexcept { return impl_->not_before; }

}  // namespace wallet
