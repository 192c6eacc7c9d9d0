#include "wallet/log.hpp"

#include <unistd.h>

#include <chrono>
#include <mutex>
#include <string>

#include "wallet/timestamp.hpp"

namespace wallet {
namespace {

std::mutex& program_mutex() {
    static std::mutex mutex;
    return mutex;
}

std::string& program_name() {
    static std::string name = "wallet";
    return name;
}

const char* level_name(LogLevel level) {
    switch (level) {
        case LogLevel::Info: return "info";
        case LogLevel::Warning: return "warning";
        case LogLevel::Error: return "error";
    }
    return "info";
}

}  // namespace

void set_log_program(std::string_view program) {
    std::lock_guard lock(program_mutex());
    program_name() = std::string(program);
}

void log_line(LogLevel level, std::string_view message) {
    const auto now = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch());
    auto time = Timestamp::from_seconds(now.count());
    std::string line = time ? time->to_iso_z() : std::string("?");
    {
        std::lock_guard lock(program_mutex());
        line += ' ' + program_name();
    }
    line += ' ';
    line += level_name(level);
    line += ": ";
    // One event, one line.
    for (const char c : message) line += (c == '\n' || c == '\r') ? ' ' : c;
    line += '\n';
    std::size_t written = 0;
    while (written < line.size()) {
        const ssize_t n = ::write(STDERR_FILENO, line.data() + written, line.size() - written);
        if (n <= 0) break;
        written += static_cast<std::size_t>(n);
    }
}

}  // namespace wallet
