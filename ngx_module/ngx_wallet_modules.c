/* The module list of ngx_http_wallet_module.so, as nginx's auto/make would
 * generate it for a dynamic module. */
#include <ngx_config.h>
#include <ngx_core.h>

extern ngx_module_t ngx_http_wallet_history_module;
extern ngx_module_t ngx_http_jsonrpc_router_module;

ngx_module_t *ngx_modules[] = {
    &ngx_http_wallet_history_module,
    &ngx_http_jsonrpc_router_module,
    NULL
};

char *ngx_module_names[] = {
    "ngx_http_wallet_history_module",
    "ngx_http_jsonrpc_router_module",
    NULL
};

char *ngx_module_order[] = { NULL };
