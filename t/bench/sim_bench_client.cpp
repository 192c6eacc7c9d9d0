// sim_bench_client: fetches a block range from a node as batched
// get_ops_in_block requests over a few kept-alive connections (as a loader's
// workers do), discards the answers and reports bytes, blocks and operations
// per second.
//
//   sim_bench_client URL condenser|nai FIRST_BLOCK BLOCKS [BATCH [CONNECTIONS]]
//
// Prints one line: form=... blocks=... ops=... bytes=... seconds=...
// blocks_per_s=... ops_per_s=... mb_per_s=...
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "wallet/handles.hpp"

namespace {

struct CurlMultiDeleter {
    void operator()(CURLM* multi) const noexcept { curl_multi_cleanup(multi); }
};

struct Transfer {
    wallet::CurlPtr easy;
    std::string request;
    std::string response;
    unsigned long first_block = 0;
};

std::size_t collect(char* data, std::size_t size, std::size_t count, void* user) {
    static_cast<std::string*>(user)->append(data, size * count);
    return size * count;
}

std::size_t count_of(std::string_view haystack, std::string_view needle) {
    std::size_t found = 0;
    const char* at = haystack.data();
    const char* end = haystack.data() + haystack.size();
    while (const void* hit = memmem(at, static_cast<std::size_t>(end - at), needle.data(), needle.size())) {
        ++found;
        at = static_cast<const char*>(hit) + needle.size();
    }
    return found;
}

void build_batch(std::string& request, const std::string& form, unsigned long first, unsigned long end) {
    request.clear();
    request.push_back('[');
    for (unsigned long n = first; n < end; ++n) {
        if (n != first) request.push_back(',');
        request += "{\"jsonrpc\":\"2.0\",\"id\":" + std::to_string(n);
        if (form == "condenser")
            request += ",\"method\":\"condenser_api.get_ops_in_block\",\"params\":[" + std::to_string(n) + ",false]}";
        else
            request +=
                ",\"method\":\"account_history_api.get_ops_in_block\",\"params\":{\"block_num\":" + std::to_string(n) +
                ",\"only_virtual\":false}}";
    }
    request.push_back(']');
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 5) {
        std::fprintf(stderr, "usage: sim_bench_client URL condenser|nai FIRST_BLOCK BLOCKS [BATCH [CONNECTIONS]]\n");
        return 2;
    }
    const std::string url = argv[1];
    const std::string form = argv[2];
    const unsigned long first = std::strtoul(argv[3], nullptr, 10);
    const unsigned long blocks = std::strtoul(argv[4], nullptr, 10);
    const unsigned long batch = argc > 5 ? std::strtoul(argv[5], nullptr, 10) : 100;
    const unsigned long connections = argc > 6 ? std::strtoul(argv[6], nullptr, 10) : 4;
    if ((form != "condenser" && form != "nai") || blocks == 0 || batch == 0 || connections == 0) {
        std::fprintf(stderr, "sim_bench_client: bad arguments\n");
        return 2;
    }

    curl_global_init(CURL_GLOBAL_DEFAULT);
    std::unique_ptr<CURLM, CurlMultiDeleter> multi(curl_multi_init());
    wallet::CurlSlistPtr headers(curl_slist_append(nullptr, "Content-Type: application/json"));
    headers.reset(curl_slist_append(headers.release(), "Expect:"));

    std::vector<Transfer> transfers(connections);
    unsigned long next_block = first;
    const unsigned long end_block = first + blocks;
    auto start_next = [&](Transfer& transfer) -> bool {
        if (next_block >= end_block) return false;
        transfer.first_block = next_block;
        unsigned long stop = std::min(end_block, next_block + batch);
        build_batch(transfer.request, form, next_block, stop);
        next_block = stop;
        transfer.response.clear();
        curl_easy_setopt(transfer.easy.get(), CURLOPT_POSTFIELDS, transfer.request.c_str());
        curl_easy_setopt(transfer.easy.get(), CURLOPT_POSTFIELDSIZE, static_cast<long>(transfer.request.size()));
        curl_multi_add_handle(multi.get(), transfer.easy.get());
        return true;
    };
    for (auto& transfer : transfers) {
        transfer.easy.reset(curl_easy_init());
        curl_easy_setopt(transfer.easy.get(), CURLOPT_URL, url.c_str());
        curl_easy_setopt(transfer.easy.get(), CURLOPT_HTTPHEADER, headers.get());
        curl_easy_setopt(transfer.easy.get(), CURLOPT_WRITEFUNCTION, collect);
        curl_easy_setopt(transfer.easy.get(), CURLOPT_WRITEDATA, &transfer.response);
        curl_easy_setopt(transfer.easy.get(), CURLOPT_PRIVATE, &transfer);
        curl_easy_setopt(transfer.easy.get(), CURLOPT_TIMEOUT_MS, 60000L);
    }

    std::size_t bytes = 0, ops = 0;
    auto started = std::chrono::steady_clock::now();
    for (auto& transfer : transfers) start_next(transfer);
    int running = 0;
    do {
        curl_multi_perform(multi.get(), &running);
        int queued = 0;
        while (CURLMsg* message = curl_multi_info_read(multi.get(), &queued)) {
            if (message->msg != CURLMSG_DONE) continue;
            Transfer* transfer = nullptr;
            curl_easy_getinfo(message->easy_handle, CURLINFO_PRIVATE, &transfer);
            long status = 0;
            curl_easy_getinfo(message->easy_handle, CURLINFO_RESPONSE_CODE, &status);
            CURLcode code = message->data.result;
            curl_multi_remove_handle(multi.get(), message->easy_handle);
            const std::string& body = transfer->response;
            if (code != CURLE_OK || status != 200 || body.empty() || body.front() != '[' ||
                count_of(body, "\"error\":{") != 0) {
                std::fprintf(stderr, "sim_bench_client: batch at %lu failed: %s (HTTP %ld) %.200s\n",
                             transfer->first_block, curl_easy_strerror(code), status, body.c_str());
                return 1;
            }
            bytes += body.size();
            ops += count_of(body, "trx_in_block");
            if (start_next(*transfer)) ++running;
        }
        if (running > 0) curl_multi_poll(multi.get(), nullptr, 0, 1000, nullptr);
    } while (running > 0);
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    std::printf("form=%s blocks=%lu ops=%zu bytes=%zu seconds=%.3f blocks_per_s=%.0f ops_per_s=%.0f mb_per_s=%.1f\n",
                form.c_str(), blocks, ops, bytes, seconds, static_cast<double>(blocks) / seconds,
                static_cast<double>(ops) / seconds, static_cast<double>(bytes) / seconds / 1e6);
    transfers.clear();
    curl_global_cleanup();
    return 0;
}
