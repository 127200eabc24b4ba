// bench/src/report.cpp — table and JSON renderings of a bench Report.
#include "queen/bench/report.hpp"

#include <iomanip>
#include <nlohmann/json.hpp>
#include <sstream>

namespace queen::bench {
namespace {

double ms_of(std::int64_t ns) {
    return static_cast<double>(ns) / 1e6;
}

std::string fixed(double value, int digits) {
    std::ostringstream out;
    out << std::fixed << std::setprecision(digits) << value;
    return out.str();
}

std::string load_of(const Conditions& c) {
    return c.load_average_1m < 0 ? std::string("?") : fixed(c.load_average_1m, 2);
}

}  // namespace

double Report::msgs_per_s() const noexcept {
    return elapsed_s > 0 ? static_cast<double>(messages) / elapsed_s : 0.0;
}

double Report::mb_per_s() const noexcept {
    return elapsed_s > 0 ? static_cast<double>(bytes) / 1e6 / elapsed_s : 0.0;
}

std::optional<bool> Report::goal_met() const {
    if (!goal.is_set()) {
        return std::nullopt;
    }
    const bool fast_enough = goal.msgs_per_s_min <= 0 || msgs_per_s() >= goal.msgs_per_s_min;
    const bool quick_enough =
        goal.p99_ms_max <= 0 || ms_of(latency_ns.value_at_percentile(99)) < goal.p99_ms_max;
    const bool keeps_up = goal.keep_up_msgs_per_s_min <= 0 ||
                          steady_consume_msgs_per_s >= goal.keep_up_msgs_per_s_min;
    return errors == 0 && fast_enough && quick_enough && keeps_up;
}

std::string describe_goal(const Goal& goal) {
    std::string out;
    if (goal.msgs_per_s_min > 0) {
        out += ">= " + fixed(goal.msgs_per_s_min, 0) + " msgs/s";
    }
    if (goal.p99_ms_max > 0) {
        out +=
            (out.empty() ? "" : ", ") + std::string("p99 < ") + fixed(goal.p99_ms_max, 1) + " ms";
    }
    if (goal.keep_up_msgs_per_s_min > 0) {
        out += (out.empty() ? "" : ", ") + std::string("consumers keep up at >= ") +
               fixed(goal.keep_up_msgs_per_s_min, 0) + " msgs/s";
    }
    return out;
}

std::string format_ms(std::int64_t ns) {
    return fixed(ms_of(ns), 3);
}

std::string format_table(const Report& report) {
    std::ostringstream out;
    const auto line = [&out](std::string_view name, const std::string& value) {
        // Long metric names keep one space before their value.
        out << "  " << std::left << std::setw(22) << name << (name.size() >= 22 ? " " : "") << value
            << "\n";
    };
    out << "queen bench " << report.workload;
    if (!report.profile.empty()) {
        out << " (profile " << report.profile << ")";
    }
    out << "\n";
    line("throughput",
         fixed(report.msgs_per_s(), 0) + " msgs/s, " + fixed(report.mb_per_s(), 2) + " MB/s");
    if (report.target_msgs_per_s > 0) {
        line("paced rate",
             "target " + fixed(report.target_msgs_per_s, 0) + " msgs/s, producers achieved " +
                 fixed(report.produce_msgs_per_s, 0) + " msgs/s (" +
                 fixed(100.0 * report.produce_msgs_per_s / report.target_msgs_per_s, 1) + "%)");
    }
    if (report.steady_consume_msgs_per_s > 0) {
        line("steady consume", fixed(report.steady_consume_msgs_per_s, 0) +
                                   " msgs/s over the second half of producing");
    }
    const Histogram& h = report.latency_ns;
    line("latency ms", "p50 " + format_ms(h.value_at_percentile(50)) + "  p90 " +
                           format_ms(h.value_at_percentile(90)) + "  p99 " +
                           format_ms(h.value_at_percentile(99)) + "  p99.9 " +
                           format_ms(h.value_at_percentile(99.9)) + "  max " + format_ms(h.max()));
    line("latency of", report.latency_of + " (" + std::to_string(h.count()) + " samples)");
    line("elapsed", fixed(report.elapsed_s, 2) + " s");
    line("messages",
         std::to_string(report.messages) + " (" + std::to_string(report.bytes) + " payload bytes)");
    line("produced/consumed",
         std::to_string(report.produced) + " / " + std::to_string(report.consumed));
    if (report.duplicates != 0 || report.missing != 0) {
        line("duplicates/missing",
             std::to_string(report.duplicates) + " / " + std::to_string(report.missing));
    }
    line("errors", std::to_string(report.errors));
    for (const ErrorSample& sample : report.error_samples) {
        line("", std::to_string(sample.count) + " x " + sample.what);
    }
    if (const auto met = report.goal_met()) {
        line("goal", describe_goal(report.goal) + ": " + (*met ? "met" : "NOT met"));
    }
    if (report.check_passed) {
        line("check", (*report.check_passed ? "passed: " : "FAILED: ") + report.check);
    }
    for (const Metric& metric : report.metrics) {
        line(metric.name,
             fixed(metric.value,
                   metric.value == static_cast<double>(static_cast<std::int64_t>(metric.value))
                       ? 0
                       : 2));
    }
    const Conditions& c = report.conditions;
    out << "  conditions\n";
    line("  server", c.url + " version " + (c.server_version.empty() ? "?" : c.server_version));
    line("  durability", c.durability.empty() ? std::string("?") : c.durability);
    line("  batch/size",
         std::to_string(c.batch) + " msgs x " + std::to_string(c.size_bytes) + " bytes");
    line(report.workload == "lanes" ? "  lanes" : "  partitions",
         std::to_string(c.partitions) +
             (c.pop_partitions > 0 ? ", pops claim up to " + std::to_string(c.pop_partitions) +
                                         " partition" + (c.pop_partitions == 1 ? "" : "s")
                                   : std::string()));
    line("  clients", std::to_string(c.producers) + " producers, " + std::to_string(c.consumers) +
                          " consumers on " + std::to_string(c.driver_threads) + " driver thread" +
                          (c.driver_threads == 1 ? "" : "s") +
                          (c.is_pipelined ? ", pops pipelined behind transactions" : ""));
    if (c.seed) {
        line("  seed", std::to_string(*c.seed) + " (--seed replays the producers' lane choices)");
    }
    line("  machine", std::to_string(c.cores) + " cores, load average " + load_of(c));
    if (c.server_rss_bytes >= 0) {
        line("  server rss",
             fixed(static_cast<double>(c.server_rss_bytes) / 1048576.0, 1) + " MiB");
    }
    return out.str();
}

namespace {

/// The value of metric `name`, or `fallback`.
double metric_or(const Report& report, std::string_view name, double fallback) {
    for (const Metric& metric : report.metrics) {
        if (metric.name == name) {
            return metric.value;
        }
    }
    return fallback;
}

}  // namespace

std::string format_comparison(const std::vector<NamedReport>& runs, bool json) {
    const auto rate = [](const Report& r) {
        return metric_or(r, "transactions_per_s", r.msgs_per_s());
    };
    const auto cpu = [](const Report& r) { return metric_or(r, "server_cpu_us_per_msg", -1); };
    if (json) {
        nlohmann::ordered_json list = nlohmann::ordered_json::array();
        nlohmann::ordered_json ratios = nlohmann::ordered_json::object();
        for (const NamedReport& run : runs) {
            list.push_back({{"name", run.name},
                            {"per_s", rate(*run.report)},
                            {"server_cpu_us", cpu(*run.report)}});
            if (&run != &runs.front() && rate(*run.report) > 0) {
                ratios[runs.front().name + "/" + run.name] =
                    rate(*runs.front().report) / rate(*run.report);
            }
        }
        return nlohmann::ordered_json{{"compare", list}, {"ratios", ratios}}.dump() + "\n";
    }
    std::string out = "compare\n";
    char line[256];
    for (const NamedReport& run : runs) {
        std::snprintf(line, sizeof line, "  %-20s %12.2f /s  server %.2f us each", run.name.c_str(),
                      rate(*run.report), cpu(*run.report));
        out += line;
        if (&run != &runs.front() && rate(*run.report) > 0) {
            std::snprintf(line, sizeof line, "  %s/%s %.2f", runs.front().name.c_str(),
                          run.name.c_str(), rate(*runs.front().report) / rate(*run.report));
            out += line;
        }
        out += "\n";
    }
    return out;
}

std::string format_json(const Report& report) {
    const Histogram& h = report.latency_ns;
    nlohmann::ordered_json metrics = nlohmann::ordered_json::object();
    for (const Metric& metric : report.metrics) {
        metrics[metric.name] = metric.value;
    }
    nlohmann::ordered_json error_samples = nlohmann::ordered_json::array();
    for (const ErrorSample& sample : report.error_samples) {
        error_samples.push_back({{"error", sample.what}, {"count", sample.count}});
    }
    const Conditions& c = report.conditions;
    nlohmann::ordered_json conditions = {
        {"url", c.url},
        {"server_version", c.server_version},
        {"durability", c.durability},
        {"batch", c.batch},
        {"size_bytes", c.size_bytes},
        {"partitions", c.partitions},
        {"pop_partitions", c.pop_partitions},
        {"producers", c.producers},
        {"consumers", c.consumers},
        {"driver_threads", c.driver_threads},
        {"pipelined", c.is_pipelined},
        {"seed", c.seed ? nlohmann::ordered_json(*c.seed) : nlohmann::ordered_json(nullptr)},
        {"cores", c.cores},
        {"load_average_1m", c.load_average_1m < 0 ? nlohmann::ordered_json(nullptr)
                                                  : nlohmann::ordered_json(c.load_average_1m)},
        {"server_rss_bytes", c.server_rss_bytes < 0 ? nlohmann::ordered_json(nullptr)
                                                    : nlohmann::ordered_json(c.server_rss_bytes)},
    };
    nlohmann::ordered_json json = {
        {"workload", report.workload},
        {"profile", report.profile},
        {"msgs_per_s", report.msgs_per_s()},
        {"mb_per_s", report.mb_per_s()},
        {"target_msgs_per_s", report.target_msgs_per_s},
        {"produce_msgs_per_s", report.produce_msgs_per_s},
        {"steady_consume_msgs_per_s", report.steady_consume_msgs_per_s},
        {"latency_ms",
         {{"p50", ms_of(h.value_at_percentile(50))},
          {"p90", ms_of(h.value_at_percentile(90))},
          {"p99", ms_of(h.value_at_percentile(99))},
          {"p999", ms_of(h.value_at_percentile(99.9))},
          {"max", ms_of(h.max())},
          {"count", h.count()},
          {"of", report.latency_of}}},
        {"elapsed_s", report.elapsed_s},
        {"messages", report.messages},
        {"bytes", report.bytes},
        {"produced", report.produced},
        {"consumed", report.consumed},
        {"duplicates", report.duplicates},
        {"missing", report.missing},
        {"errors", report.errors},
        {"error_samples", error_samples},
        {"metrics", metrics},
        {"conditions", conditions},
        {"goal", nullptr},
        {"check", nullptr},
    };
    if (const auto met = report.goal_met()) {
        json["goal"] = {{"msgs_per_s_min", report.goal.msgs_per_s_min},
                        {"p99_ms_max", report.goal.p99_ms_max},
                        {"keep_up_msgs_per_s_min", report.goal.keep_up_msgs_per_s_min},
                        {"met", *met}};
    }
    if (report.check_passed) {
        json["check"] = {{"passed", *report.check_passed}, {"what", report.check}};
    }
    return json.dump();
}

}  // namespace queen::bench
