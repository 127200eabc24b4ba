// modules/core/src/logger.cpp — level names and the stderr sink used by the CLI.
#include "queen/core/logger.hpp"

#include <unistd.h>

#include <cctype>
#include <cstring>

namespace queen {

std::string_view level_name(Level level) noexcept {
    switch (level) {
        case Level::trace: return "trace";
        case Level::debug: return "debug";
        case Level::info: return "info";
        case Level::warn: return "warn";
        case Level::error: return "error";
        case Level::off: return "off";
    }
    return "?";
}

bool parse_level(std::string_view text, Level& out) noexcept {
    for (Level level :
         {Level::trace, Level::debug, Level::info, Level::warn, Level::error, Level::off}) {
        if (text == level_name(level)) {
            out = level;
            return true;
        }
    }
    return false;
}

NullLogger& NullLogger::instance() {
    static NullLogger logger;
    return logger;
}

void StderrLogger::write(Level level, std::string_view event, std::string_view fields,
                         const char* file, int line) {
    std::string text;
    text.reserve(event.size() + fields.size() + 48);
    text.push_back(
        static_cast<char>(std::toupper(static_cast<unsigned char>(level_name(level)[0]))));
    text.push_back(' ');
    text.append(event);
    if (!fields.empty()) {
        text.push_back(' ');
        text.append(fields);
    }
    const char* base = std::strrchr(file, '/');
    text.append(" (");
    text.append(base != nullptr ? base + 1 : file);
    text.push_back(':');
    text.append(std::to_string(line));
    text.append(")\n");
    std::lock_guard lock(mutex_);
    std::size_t written = 0;
    while (written < text.size()) {
        const ssize_t n = ::write(STDERR_FILENO, text.data() + written, text.size() - written);
        if (n <= 0) {
            break;
        }
        written += static_cast<std::size_t>(n);
    }
}

}  // namespace queen
