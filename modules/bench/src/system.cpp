// bench/src/system.cpp — /proc readers and the small parsers behind a report's conditions.
#include "queen/bench/system.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace queen::bench {

queen::Result<std::int64_t> read_process_rss_bytes(int pid) {
    const std::string path = "/proc/" + std::to_string(pid) + "/status";
    std::ifstream in(path);
    if (!in) {
        return queen::Error{queen::Errc::not_found, path};
    }
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind("VmRSS:", 0) != 0) {
            continue;
        }
        std::istringstream fields(line.substr(6));
        std::int64_t kib = 0;
        std::string unit;
        if (fields >> kib >> unit && unit == "kB") {
            return kib * 1024;
        }
        break;
    }
    return queen::Error{queen::Errc::io, path + ": no VmRSS in kB"};
}

std::optional<std::int64_t> parse_proc_stat_cpu_ticks(std::string_view stat) {
    const std::size_t close = stat.rfind(')');
    if (close == std::string_view::npos) {
        return std::nullopt;
    }
    // After ") ": field 3 (state) is the first; utime and stime are fields 14 and 15.
    std::string_view rest = stat.substr(close + 1);
    std::int64_t ticks = 0;
    for (int field = 3; field <= 15; ++field) {
        while (!rest.empty() && rest.front() == ' ') {
            rest.remove_prefix(1);
        }
        const std::size_t end = std::min(rest.find(' '), rest.size());
        const std::string_view value = rest.substr(0, end);
        if (value.empty()) {
            return std::nullopt;
        }
        if (field >= 14) {
            std::int64_t parsed = 0;
            const auto [ptr, ec] =
                std::from_chars(value.data(), value.data() + value.size(), parsed);
            if (ec != std::errc{} || ptr != value.data() + value.size() || parsed < 0) {
                return std::nullopt;
            }
            ticks += parsed;
        }
        rest.remove_prefix(end);
    }
    return ticks;
}

queen::Result<double> read_process_cpu_us(int pid) {
    const std::string path = "/proc/" + std::to_string(pid) + "/stat";
    std::ifstream in(path);
    if (!in) {
        return queen::Error{queen::Errc::not_found, path};
    }
    std::string stat;
    std::getline(in, stat);
    const auto ticks = parse_proc_stat_cpu_ticks(stat);
    const long per_second = ::sysconf(_SC_CLK_TCK);
    if (!ticks || per_second <= 0) {
        return queen::Error{queen::Errc::io, path + ": no CPU times"};
    }
    return static_cast<double>(*ticks) * 1e6 / static_cast<double>(per_second);
}

double own_cpu_us() {
    rusage usage{};
    ::getrusage(RUSAGE_SELF, &usage);
    const auto us = [](const timeval& t) {
        return static_cast<double>(t.tv_sec) * 1e6 + static_cast<double>(t.tv_usec);
    };
    return us(usage.ru_utime) + us(usage.ru_stime);
}

std::optional<double> read_load_average_1m() {
    std::ifstream in("/proc/loadavg");
    double load = 0;
    if (in >> load) {
        return load;
    }
    return std::nullopt;
}

std::optional<double> find_prometheus_sample(std::string_view text, std::string_view name) {
    while (!text.empty()) {
        const std::size_t end = text.find('\n');
        std::string_view line = text.substr(0, end);
        text = end == std::string_view::npos ? std::string_view{} : text.substr(end + 1);
        if (line.empty() || line.front() == '#' || line.substr(0, name.size()) != name) {
            continue;
        }
        std::string_view rest = line.substr(name.size());
        if (!rest.empty() && rest.front() == '{') {
            const std::size_t close = rest.find('}');
            if (close == std::string_view::npos) {
                continue;
            }
            rest = rest.substr(close + 1);
        }
        if (rest.empty() || (rest.front() != ' ' && rest.front() != '\t')) {
            continue;  // another metric whose name starts with `name`
        }
        while (!rest.empty() && (rest.front() == ' ' || rest.front() == '\t')) {
            rest.remove_prefix(1);
        }
        const std::string number(rest.substr(0, rest.find_first_of(" \t\r")));
        try {
            std::size_t used = 0;
            const double value = std::stod(number, &used);
            if (used == number.size()) {
                return value;
            }
        } catch (const std::exception&) {
            // not a number: the sample is malformed, keep looking
        }
    }
    return std::nullopt;
}

queen::Result<ServerFacts> parse_health(std::string_view json) {
    const auto parsed = nlohmann::json::parse(json, nullptr, false);
    if (parsed.is_discarded() || !parsed.is_object()) {
        return queen::Error{queen::Errc::invalid_argument, "/health is not a JSON object"};
    }
    ServerFacts facts;
    if (const auto it = parsed.find("version"); it != parsed.end() && it->is_string()) {
        facts.version = it->get<std::string>();
    }
    if (const auto it = parsed.find("status"); it != parsed.end() && it->is_string()) {
        facts.status = it->get<std::string>();
    }
    return facts;
}

}  // namespace queen::bench
