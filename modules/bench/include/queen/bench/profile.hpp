// queen/bench/profile.hpp — named bench profiles from conf/bench.toml: a workload and the values
// of its flags, so `make bench` and people run the same thing.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "queen/bench/report.hpp"
#include "queen/bench/workload.hpp"
#include "queen/core/result.hpp"

namespace queen::bench {

/// One `[profiles.<name>]` table. Absent keys are nullopt (the command's default applies).
struct Profile {
    std::string name;
    std::string description;
    Workload workload = Workload::produce;
    std::optional<std::int64_t> producers;
    std::optional<std::int64_t> consumers;
    std::optional<std::int64_t> batch;
    std::optional<std::int64_t> size_bytes;  ///< key `size`
    std::optional<std::int64_t> partitions;
    std::optional<std::int64_t> pop_partitions;
    std::optional<std::int64_t> messages;
    std::optional<double> duration_s;       ///< key `duration`
    std::optional<double> rate_msgs_per_s;  ///< key `rate`: paced producers (produce, e2e, stream)
    std::optional<std::string> consumer_group;
    std::optional<bool> is_pipelined;  ///< key `pipeline`
    bool is_standard = false;          ///< key `standard`: run by `make bench`
    Goal goal;  ///< keys `goal_msgs_per_s`, `goal_p99_ms`: checked in the report
};

/// Every profile of the TOML text `text` (`[profiles.<name>]` tables), in file order.
/// Keys: description, workload (required), producers, consumers, batch, size, partitions,
/// pop_partitions, messages, duration, rate, consumer_group, pipeline, standard,
/// goal_msgs_per_s, goal_p99_ms, goal_keep_up_msgs_per_s.
/// Errors: queen::Errc::invalid_argument naming the profile and key (TOML syntax, unknown key,
/// wrong type, unknown workload, missing workload).
[[nodiscard]] queen::Result<std::vector<Profile>> parse_profiles(std::string_view text);

/// parse_profiles() of the file at `path`.
/// Errors: queen::Errc::not_found (unreadable), and those of parse_profiles().
[[nodiscard]] queen::Result<std::vector<Profile>> load_profiles(const std::filesystem::path& path);

/// The profile called `name` among `profiles`.
/// Errors: queen::Errc::invalid_argument (no such profile; the message lists the known names).
[[nodiscard]] queen::Result<Profile> find_profile(const std::vector<Profile>& profiles,
                                                  std::string_view name);

}  // namespace queen::bench
