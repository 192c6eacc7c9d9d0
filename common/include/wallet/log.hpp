// One-line operator logs on stderr ("<UTC time> <program> <level>: <text>"),
// each written with a single write(2) so that lines of threads never mix.
// Callers log events worth an operator's attention, never memos or payloads.
#pragma once

#include <string_view>

namespace wallet {

enum class LogLevel { Info, Warning, Error };

// The program name printed on every line (default "wallet").
void set_log_program(std::string_view program);

void log_line(LogLevel level, std::string_view message);
inline void log_info(std::string_view message) { log_line(LogLevel::Info, message); }
inline void log_warning(std::string_view message) { log_line(LogLevel::Warning, message); }
inline void log_error(std::string_view message) { log_line(LogLevel::Error, message); }

}  // namespace wallet
