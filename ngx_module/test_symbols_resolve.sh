#!/usr/bin/env bash
# Every undefined ngx_* symbol of the module must be exported by /usr/sbin/nginx,
# or load_module fails at dlopen time on a machine where this test did not run.
set -u
module=$1
exported=$(nm -D --defined-only /usr/sbin/nginx | awk '{print $3}' | sort -u)
missing=0
for sym in $(nm -D --undefined-only "$module" | awk '{print $2}' | grep '^ngx_' | sort -u); do
  if ! grep -qxF "$sym" <<<"$exported"; then
    echo "unresolved: $sym"
    missing=1
  fi
done
[ "$missing" = 0 ] && echo "all ngx_* symbols resolve"
exit "$missing"
