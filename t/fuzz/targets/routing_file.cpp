// The routing-file loader (spec 001): targets and their URLs, timeouts,
// route patterns (compiled by PCRE2), cache settings. A table that loads
// must route: every route's target exists, and matching works.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_check.hpp"
#include "router_config.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text = fuzz::text(data, size);
    (void)router::parse_target_url(std::string(text));

    auto table = router::parse_routing_table(text, "fuzz.json");
    if (!table) {
        fuzz::check(!table.error().empty(), "a refused file says why");
        return 0;
    }
    for (const router::Route& route : table->routes) {
        fuzz::check(route.target < table->targets.size(), "every route names a target of the file");
        fuzz::check(route.ttl >= 0, "cache ttls are seconds");
    }
    for (const router::Target& target : table->targets) {
        fuzz::check(table->find_target(target.name).has_value(), "every target is found by name");
        fuzz::check(target.timeout_ms > 0, "timeouts are positive");
    }
    for (std::string_view path : {"condenser_api.get_block", "bridge.get_ranked_posts", "", "\xc3\xa9.x"}) {
        if (const router::Route* route = table->match(path)) {
            fuzz::check(route->target < table->targets.size(), "a matched route has a target");
        }
    }
    return 0;
}
