// nginx's C headers for the C++ glue files. Nothing of nginx leaks into the
// cores under core/, which stay unit-testable without nginx.
#pragma once

extern "C" {
#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>
}
