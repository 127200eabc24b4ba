// bench/src/profile.cpp — conf/bench.toml parsing (toml++ stays here).
#include "queen/bench/profile.hpp"

#include <toml++/toml.h>
#include <algorithm>
#include <fstream>
#include <sstream>

namespace queen::bench {
namespace {

queen::Error invalid(std::string what) {
    return queen::Error{queen::Errc::invalid_argument, std::move(what)};
}

queen::Result<Profile> parse_profile(std::string name, const toml::table& table) {
    Profile profile;
    profile.name = std::move(name);
    const std::string where = "profiles." + profile.name;
    bool has_workload = false;
    for (const auto& [key_node, value] : table) {
        const std::string key(key_node.str());
        const auto integer = [&](std::optional<std::int64_t>& out) -> queen::Result<void> {
            const auto v = value.value<std::int64_t>();
            if (!value.is_integer() || !v) {
                return invalid(where + "." + key + ": expected an integer");
            }
            out = *v;
            return {};
        };
        if (key == "workload" || key == "description" || key == "consumer_group") {
            if (!value.is_string()) {
                return invalid(where + "." + key + ": expected a string");
            }
            const std::string text = *value.value<std::string>();
            if (key == "workload") {
                QUEEN_TRY(profile.workload, parse_workload(text));
                has_workload = true;
            } else if (key == "description") {
                profile.description = text;
            } else {
                profile.consumer_group = text;
            }
        } else if (key == "producers") {
            QUEEN_TRY(integer(profile.producers));
        } else if (key == "consumers") {
            QUEEN_TRY(integer(profile.consumers));
        } else if (key == "batch") {
            QUEEN_TRY(integer(profile.batch));
        } else if (key == "size") {
            QUEEN_TRY(integer(profile.size_bytes));
        } else if (key == "partitions") {
            QUEEN_TRY(integer(profile.partitions));
        } else if (key == "pop_partitions") {
            QUEEN_TRY(integer(profile.pop_partitions));
        } else if (key == "messages") {
            QUEEN_TRY(integer(profile.messages));
        } else if (key == "duration") {
            if (!value.is_number()) {
                return invalid(where + ".duration: expected a number of seconds");
            }
            profile.duration_s = *value.value<double>();
        } else if (key == "rate") {
            if (!value.is_number() || *value.value<double>() < 0) {
                return invalid(where + ".rate: expected a number of messages per second >= 0");
            }
            profile.rate_msgs_per_s = *value.value<double>();
        } else if (key == "goal_msgs_per_s" || key == "goal_p99_ms" ||
                   key == "goal_keep_up_msgs_per_s") {
            if (!value.is_number() || !(*value.value<double>() > 0)) {
                return invalid(where + "." + key + ": expected a number > 0");
            }
            (key == "goal_msgs_per_s" ? profile.goal.msgs_per_s_min
             : key == "goal_p99_ms"   ? profile.goal.p99_ms_max
                                    : profile.goal.keep_up_msgs_per_s_min) = *value.value<double>();
        } else if (key == "standard" || key == "pipeline") {
            if (!value.is_boolean()) {
                return invalid(where + "." + key + ": expected true or false");
            }
            (key == "standard" ? profile.is_standard : profile.is_pipelined.emplace()) =
                *value.value<bool>();
        } else {
            return invalid(where + "." + key + ": unknown key");
        }
    }
    if (!has_workload) {
        return invalid(where + ": missing workload");
    }
    return profile;
}

}  // namespace

queen::Result<std::vector<Profile>> parse_profiles(std::string_view text) {
    toml::table root;
    try {
        root = toml::parse(text);
    } catch (const toml::parse_error& error) {
        std::ostringstream out;
        out << "bench profiles: " << error.description() << " at line "
            << error.source().begin.line;
        return invalid(out.str());
    }
    std::vector<Profile> profiles;
    std::vector<std::uint32_t> lines;  // where each profile starts in the file
    for (const auto& [key, node] : root) {
        if (key.str() != "profiles" || !node.is_table()) {
            return invalid("bench profiles: unknown top-level key " + std::string(key.str()));
        }
        for (const auto& [name, profile_node] : *node.as_table()) {
            if (!profile_node.is_table()) {
                return invalid("profiles." + std::string(name.str()) + ": expected a table");
            }
            QUEEN_TRY(auto profile,
                      parse_profile(std::string(name.str()), *profile_node.as_table()));
            profiles.push_back(std::move(profile));
            lines.push_back(profile_node.source().begin.line);
        }
    }
    // toml++ tables iterate in key order; people expect the file's order.
    std::vector<std::size_t> order(profiles.size());
    for (std::size_t i = 0; i < order.size(); ++i) {
        order[i] = i;
    }
    std::stable_sort(order.begin(), order.end(),
                     [&lines](std::size_t a, std::size_t b) { return lines[a] < lines[b]; });
    std::vector<Profile> sorted;
    sorted.reserve(profiles.size());
    for (const std::size_t i : order) {
        sorted.push_back(std::move(profiles[i]));
    }
    return sorted;
}

queen::Result<std::vector<Profile>> load_profiles(const std::filesystem::path& path) {
    std::ifstream in(path);
    if (!in) {
        return queen::Error{queen::Errc::not_found, path.string()};
    }
    std::ostringstream text;
    text << in.rdbuf();
    auto profiles = parse_profiles(text.str());
    if (!profiles) {
        return queen::Error{profiles.error().code, path.string() + ": " + profiles.error().context};
    }
    return profiles;
}

queen::Result<Profile> find_profile(const std::vector<Profile>& profiles, std::string_view name) {
    std::string known;
    for (const Profile& profile : profiles) {
        if (profile.name == name) {
            return profile;
        }
        known += (known.empty() ? "" : ", ") + profile.name;
    }
    return invalid("no bench profile '" + std::string(name) + "' (known: " + known + ")");
}

}  // namespace queen::bench
