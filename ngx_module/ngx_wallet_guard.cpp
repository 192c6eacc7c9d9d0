#include "ngx_wallet_guard.hpp"

#include <cstdlib>
#include <new>
#include <string>
#include <string_view>
#include <vector>

namespace wallet::ngx {

namespace {

// In the shared zone once nginx has mapped it; before (or without a
// directive that registers the zone), this process's own.
metrics::Counter process_exceptions{0};
metrics::Counter* exceptions = &process_exceptions;

// The zone's tag: the same for every directive that registers it.
int guard_zone_tag;

ngx_int_t init_guard_zone(ngx_shm_zone_t* zone, void* old_data) {
    if (old_data == nullptr) {
        auto* shpool = reinterpret_cast<ngx_slab_pool_t*>(zone->shm.addr);
        void* memory = ngx_slab_calloc(shpool, sizeof(metrics::Counter));
        if (memory == nullptr) return NGX_ERROR;
        zone->data = new (memory) metrics::Counter(0);
    } else {  // reload: the count goes on
        zone->data = old_data;
    }
    exceptions = static_cast<metrics::Counter*>(zone->data);
    return NGX_OK;
}

}  // namespace

void report_exception(ngx_log_t* log, const char* where, std::exception_ptr error) noexcept {
    metrics::add(*exceptions);
    const char* what = "unknown exception";
    try {
        std::rethrow_exception(error);
    } catch (const std::exception& e) {
        what = e.what();
    } catch (...) {
    }
    ngx_log_error(NGX_LOG_ERR, log != nullptr ? log : ngx_cycle->log, 0, "wallet: exception in %s: %s", where, what);
}

bool add_guard_zone(ngx_conf_t* cf) {
    static ngx_str_t name = ngx_string("wallet_module_guard");
    ngx_shm_zone_t* zone = ngx_shared_memory_add(cf, &name, 8 * ngx_pagesize, &guard_zone_tag);
    if (zone == nullptr) return false;
    zone->init = init_guard_zone;
    return true;
}

void write_guard_metrics(metrics::TextWriter& out) {
    out.family("wallet_module_handler_exceptions_total", "counter",
               "Exceptions caught where nginx calls the module (each answered with an error or a closed connection)");
    out.sample("wallet_module_handler_exceptions_total", {}, exceptions->load(std::memory_order_relaxed));
}

#ifdef WALLET_FAULT_INJECTION
void fault_point(const char* name) {
    static std::vector<std::string> armed = [] {
        std::vector<std::string> names;
        const char* list = std::getenv("WALLET_FAULT_INJECT");
        std::string_view rest = list != nullptr ? list : "";
        while (!rest.empty()) {
            const auto comma = rest.find(',');
            if (comma != 0) names.emplace_back(rest.substr(0, comma));
            rest.remove_prefix(comma == std::string_view::npos ? rest.size() : comma + 1);
        }
        return names;
    }();
    for (auto it = armed.begin(); it != armed.end(); ++it) {
        if (*it == name) {
            armed.erase(it);  // once per worker process
            throw std::bad_alloc();
        }
    }
}
#endif

}  // namespace wallet::ngx
