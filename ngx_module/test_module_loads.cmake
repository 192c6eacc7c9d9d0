# Writes a minimal nginx.conf that only loads the module and runs `nginx -t`.
file(REMOVE_RECURSE ${WORKDIR})
file(MAKE_DIRECTORY ${WORKDIR}/logs)
file(WRITE ${WORKDIR}/nginx.conf
"load_module ${MODULE};
error_log ${WORKDIR}/logs/error.log;
pid ${WORKDIR}/logs/nginx.pid;
events {}
")
set(ENV_ARGS)
if(SANITIZE)
  execute_process(COMMAND gcc -print-file-name=libasan.so OUTPUT_VARIABLE ASAN OUTPUT_STRIP_TRAILING_WHITESPACE)
  set(ENV{LD_PRELOAD} "${ASAN} /usr/lib/x86_64-linux-gnu/libstdc++.so.6")
  set(ENV{ASAN_OPTIONS} "detect_leaks=0")
endif()
execute_process(COMMAND /usr/sbin/nginx -p ${WORKDIR} -c ${WORKDIR}/nginx.conf -t
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}${err}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "nginx -t with load_module failed")
endif()
if(NOT err MATCHES "test is successful")
  message(FATAL_ERROR "nginx -t did not report success")
endif()
