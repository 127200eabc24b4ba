// api/src/health_routes.cpp — /health, /ready, /metrics (JSON) and /metrics/prometheus
// (docs/http-api.md, health and metrics).
#include <map>
#include <sstream>

#include "format.hpp"
#include "routes.hpp"

namespace queen::api::detail {
namespace {

void write_tenants(JsonWriter& out, const NodeStatus& status) {
    out.key("tenants").begin_array();
    for (const TenantHealth& tenant : status.tenants) {
        out.begin_object()
            .field("name", tenant.name)
            .field("writable", tenant.is_writable)
            .field("poisoned", tenant.is_poisoned)
            .field_or_null("reason", tenant.reason)
            .field_or_null("catchingUp", tenant.catching_up)
            .field("appliedIndex", tenant.applied_index)
            .field("committedIndex", tenant.committed_index)
            .field("role", tenant.role)
            .field("term", tenant.term)
            .field("leaderId", tenant.leader_id);
        out.key("voters").begin_array();
        for (const std::uint64_t id : tenant.voters) {
            out.number(id);
        }
        out.end_array().key("learners").begin_array();
        for (const std::uint64_t id : tenant.learners) {
            out.number(id);
        }
        out.end_array()
            .field("logBytes", tenant.log_bytes)
            .field("stateBytes", tenant.state_bytes)
            .end_object();
    }
    out.end_array();
}

void handle_health(Context& context, const ContextPtr&, Request&, Responder responder) {
    const NodeStatus status = context.backend.node_status();
    bool is_healthy = true;
    for (const TenantHealth& tenant : status.tenants) {
        is_healthy = is_healthy && !tenant.is_poisoned;
    }
    JsonWriter out;
    out.begin_object()
        .field("status", is_healthy ? "healthy" : "unhealthy")
        .field("storage", is_healthy ? "ok" : "failed")
        .field("server", "Queen")
        .field("version", status.version)
        .field("node_id", status.node_id)
        .field("worker_id", status.node_id)
        .field("uptime_seconds", status.uptime_ms / 1000);
    write_tenants(out, status);
    out.end_object();
    responder.complete(Response::json(is_healthy ? 200 : 503, out.take()));
}

void handle_ready(Context& context, const ContextPtr&, Request&, Responder responder) {
    const NodeStatus status = context.backend.node_status();
    JsonWriter out;
    out.begin_object().field("ready", status.is_ready);
    if (!status.is_ready) {
        out.field("error", status.not_ready_reason.empty() ? std::string("not ready")
                                                           : status.not_ready_reason);
    }
    write_tenants(out, status);
    out.end_object();
    responder.complete(Response::json(status.is_ready ? 200 : 503, out.take()));
}

void handle_metrics_json(Context& context, const ContextPtr&, Request&, Responder responder) {
    const NodeStatus status = context.backend.node_status();
    const Metrics& m = context.metrics;
    const std::int64_t now = context.backend.wall_ms();
    JsonWriter out;
    out.begin_object()
        .field("uptime", status.uptime_ms / 1000)
        .key("requests")
        .begin_object()
        .field("total", m.requests.load(relaxed))
        .key("rate")
        .number(m.request_rate.per_second(now))
        .field("clientErrors", m.responses_4xx.load(relaxed))
        .field("serverErrors", m.responses_5xx.load(relaxed))
        .end_object()
        .key("messages")
        .begin_object()
        .field("total", m.push_messages.load(relaxed))
        .key("rate")
        .number(m.ingested.per_second(now))
        .field("pushed", m.push_messages.load(relaxed))
        .field("popped", m.pop_messages.load(relaxed))
        .field("acked", m.ack_messages.load(relaxed))
        .field("deadLettered", m.dlq_messages.load(relaxed))
        .key("processedRate")
        .number(m.processed.per_second(now))
        .end_object()
        .key("longPolls")
        .begin_object()
        .field("waiting", m.long_polls_waiting.load(relaxed))
        .end_object()
        .key("memory")
        .begin_object()
        .field("rss", status.resident_memory_bytes)
        .field("virtual", status.virtual_memory_bytes)
        .end_object()
        .key("cpu")
        .begin_object()
        .field("user", status.cpu_user_us)
        .field("system", status.cpu_system_us)
        .end_object();
    write_tenants(out, status);
    out.end_object();
    responder.complete(Response::json(200, out.take()));
}

// ---------------------------------------------------------------------------------------------
// Prometheus text exposition format 0.0.4.

std::string escape_label(std::string_view value) {
    std::string out;
    out.reserve(value.size());
    for (const char c : value) {
        if (c == '\\') {
            out += "\\\\";
        } else if (c == '"') {
            out += "\\\"";
        } else if (c == '\n') {
            out += "\\n";
        } else {
            out.push_back(c);
        }
    }
    return out;
}

std::string format_value(double value) {
    JsonWriter writer;
    writer.begin_array().number(value).end_array();
    std::string text = writer.take();
    text = text.substr(1, text.size() - 2);
    return text == "null" ? "NaN" : text;
}

using Labels = std::vector<std::pair<std::string, std::string>>;

std::string format_labels(const Labels& labels, std::string_view extra_name = {},
                          std::string_view extra_value = {}) {
    if (labels.empty() && extra_name.empty()) {
        return {};
    }
    std::string out = "{";
    bool first = true;
    for (const auto& [name, value] : labels) {
        if (!first) {
            out.push_back(',');
        }
        first = false;
        out += name + "=\"" + escape_label(value) + "\"";
    }
    if (!extra_name.empty()) {
        if (!first) {
            out.push_back(',');
        }
        out += std::string(extra_name) + "=\"" + escape_label(extra_value) + "\"";
    }
    out.push_back('}');
    return out;
}

/// Collects samples by family so each family is written once with its HELP and TYPE.
class Exposition {
public:
    void add(std::string_view name, std::string_view help, std::string_view type, Labels labels,
             double value) {
        Family& family = family_for(name, help, type);
        family.lines.push_back(std::string(name) + format_labels(labels) + " " +
                               format_value(value));
    }
    void add_histogram(const HistogramSample& sample) {
        Family& family = family_for(sample.name, sample.help, "histogram");
        for (std::size_t i = 0; i < sample.upper_bounds.size(); ++i) {
            const std::uint64_t count =
                i < sample.cumulative_counts.size() ? sample.cumulative_counts[i] : sample.count;
            family.lines.push_back(
                sample.name + "_bucket" +
                format_labels(sample.labels, "le", format_value(sample.upper_bounds[i])) + " " +
                std::to_string(count));
        }
        family.lines.push_back(sample.name + "_bucket" +
                               format_labels(sample.labels, "le", "+Inf") + " " +
                               std::to_string(sample.count));
        family.lines.push_back(sample.name + "_sum" + format_labels(sample.labels) + " " +
                               format_value(sample.sum));
        family.lines.push_back(sample.name + "_count" + format_labels(sample.labels) + " " +
                               std::to_string(sample.count));
    }
    [[nodiscard]] std::string text() const {
        std::string out;
        for (const Family& family : families_) {
            out += "# HELP " + family.name + " " + family.help + "\n";
            out += "# TYPE " + family.name + " " + family.type + "\n";
            for (const std::string& line : family.lines) {
                out += line;
                out.push_back('\n');
            }
        }
        return out;
    }

private:
    struct Family {
        std::string name;
        std::string help;
        std::string type;
        std::vector<std::string> lines;
    };
    Family& family_for(std::string_view name, std::string_view help, std::string_view type) {
        const auto found = index_.find(std::string(name));
        if (found != index_.end()) {
            return families_[found->second];
        }
        index_.emplace(std::string(name), families_.size());
        families_.push_back(Family{std::string(name), std::string(help), std::string(type), {}});
        return families_.back();
    }
    std::vector<Family> families_;
    std::map<std::string, std::size_t> index_;
};

void handle_prometheus(Context& context, const ContextPtr&, Request&, Responder responder) {
    const NodeStatus status = context.backend.node_status();
    const Metrics& m = context.metrics;
    Exposition out;
    const auto counter = [&](std::string_view name, std::string_view help,
                             const std::atomic<std::uint64_t>& value, Labels labels = {}) {
        out.add(name, help, "counter", std::move(labels), static_cast<double>(value.load(relaxed)));
    };
    out.add("queen_uptime_seconds", "Seconds since the node started.", "gauge", {},
            static_cast<double>(status.uptime_ms) / 1000.0);
    out.add("queen_process_resident_memory_bytes", "Resident set size of the process.", "gauge", {},
            static_cast<double>(status.resident_memory_bytes));
    out.add("queen_process_virtual_memory_bytes", "Virtual memory size of the process.", "gauge",
            {}, static_cast<double>(status.virtual_memory_bytes));
    out.add("queen_cpu_user_microseconds_total", "User CPU time of the process.", "counter", {},
            static_cast<double>(status.cpu_user_us));
    out.add("queen_cpu_system_microseconds_total", "System CPU time of the process.", "counter", {},
            static_cast<double>(status.cpu_system_us));
    counter("queen_api_requests_total", "Requests that reached an API route handler.", m.requests);
    counter("queen_http_error_responses_total", "API error responses by class.", m.responses_4xx,
            {{"class", "4xx"}});
    counter("queen_http_error_responses_total", "API error responses by class.", m.responses_5xx,
            {{"class", "5xx"}});
    counter("queen_damaged_reads_total",
            "Reads answered 500 because stored data failed its check (a message block's "
            "checksum): damage on disk, never served; queen inspect state --verify lists it.",
            m.damaged_reads);
    counter("queen_push_requests_total", "Push requests.", m.push_requests);
    counter("queen_push_messages_total", "Messages queued by pushes and transactions.",
            m.push_messages);
    counter("queen_push_items_total", "Push items by outcome other than queued.", m.push_duplicates,
            {{"status", "duplicate"}});
    counter("queen_push_items_total", "Push items by outcome other than queued.", m.push_buffered,
            {{"status", "buffered"}});
    counter("queen_push_items_total", "Push items by outcome other than queued.", m.push_failed,
            {{"status", "failed"}});
    counter("queen_pop_requests_total", "Pop requests.", m.pop_requests);
    counter("queen_pop_messages_total", "Messages delivered by pops.", m.pop_messages);
    counter("queen_pop_empty_total", "Pops answered 204 (nothing delivered).", m.pop_empty);
    counter("queen_ack_requests_total", "Ack and batch-ack requests.", m.ack_requests);
    counter("queen_ack_messages_total", "Acknowledgements that succeeded.", m.ack_messages);
    counter("queen_ack_total", "Acknowledgements by requested status.", m.ack_completed,
            {{"result", "completed"}});
    counter("queen_ack_total", "Acknowledgements by requested status.", m.ack_failed,
            {{"result", "failed"}});
    counter("queen_ack_total", "Acknowledgements by requested status.", m.ack_rejected,
            {{"result", "rejected"}});
    counter("queen_dlq_total", "Messages moved to the dead-letter queue by acks.", m.dlq_messages);
    counter("queen_transactions_total", "Transactions submitted.", m.transactions);
    counter("queen_transactions_failed_total", "Transactions rolled back.", m.transactions_failed);
    counter("queen_lease_extends_total", "Lease extend requests.", m.lease_extends);
    counter("queen_stream_cycles_total", "Stream cycles answered.", m.stream_cycles);
    counter("queen_stream_cycles_failed_total", "Stream cycles answered success:false.",
            m.stream_cycles_failed);
    counter("queen_stream_registrations_total", "Stream query registrations answered.",
            m.stream_registrations);
    counter("queen_encrypted_payloads_total", "Payloads encrypted at rest.", m.encrypted_payloads);
    out.add("queen_long_polls_waiting", "Pop requests parked in a long poll.", "gauge", {},
            static_cast<double>(m.long_polls_waiting.load(relaxed)));
    counter("queen_long_poll_retries_total",
            "Long-poll tries submitted again after a pause for a leader.", m.long_poll_retries);

    for (const TenantHealth& tenant : status.tenants) {
        const Labels labels = {{"tenant", tenant.name}};
        out.add("queen_tenant_writable", "1 when this node can commit entries for the tenant.",
                "gauge", labels, tenant.is_writable ? 1 : 0);
        out.add("queen_tenant_poisoned", "1 when the tenant stopped after a storage failure.",
                "gauge", labels, tenant.is_poisoned ? 1 : 0);
        out.add("queen_tenant_applied_index", "Last log index applied to the state.", "gauge",
                labels, static_cast<double>(tenant.applied_index));
        out.add("queen_tenant_committed_index", "Last committed log index.", "gauge", labels,
                static_cast<double>(tenant.committed_index));
        out.add("queen_raft_term", "The tenant group's raft term as this node knows it.", "gauge",
                labels, static_cast<double>(tenant.term));
        out.add("queen_raft_is_leader", "1 when this node leads the tenant's raft group.", "gauge",
                labels, tenant.role == "leader" ? 1 : 0);
        out.add("queen_raft_leader_id", "The node leading the tenant's group (0: none known).",
                "gauge", labels, static_cast<double>(tenant.leader_id));
        out.add("queen_raft_leader_changes_total",
                "New leaders of the tenant's group this node "
                "learned of.",
                "counter", labels, static_cast<double>(tenant.leader_changes));
        out.add("queen_log_bytes", "Bytes of raft log segments on disk.", "gauge", labels,
                static_cast<double>(tenant.log_bytes));
        out.add("queen_state_bytes", "Bytes of the LMDB state file.", "gauge", labels,
                static_cast<double>(tenant.state_bytes));
        // Per-queue depth and lag from applied state (one read txn per tenant).
        const TimestampMs now{context.backend.wall_ms()};
        auto queues_list =
            query(context, tenant.name, [&](const queues::Tables& tables, const store::Txn& txn) {
                return queues::list_queues(tables, txn, now);
            });
        if (!queues_list) {
            continue;
        }
        std::uint64_t dlq_total = 0;
        for (const queues::QueueSummary& queue : *queues_list) {
            const Labels queue_labels = {{"tenant", tenant.name}, {"queue", queue.name}};
            out.add("queen_queue_messages", "Messages stored in the queue.", "gauge", queue_labels,
                    static_cast<double>(queue.messages));
            out.add("queen_queue_pending_messages",
                    "Messages not yet consumed by plain queue consumers (lag).", "gauge",
                    queue_labels, static_cast<double>(queue.pending));
            out.add("queen_queue_processing_messages", "Pending messages under an active lease.",
                    "gauge", queue_labels, static_cast<double>(queue.processing));
            out.add("queen_queue_partitions", "Partitions of the queue.", "gauge", queue_labels,
                    static_cast<double>(queue.partitions));
            out.add("queen_dlq_depth_by_queue", "Dead-letter entries of the queue.", "gauge",
                    queue_labels, static_cast<double>(queue.dead_letter));
            dlq_total += queue.dead_letter;
        }
        out.add("queen_dlq_depth", "Dead-letter entries of the tenant.", "gauge", labels,
                static_cast<double>(dlq_total));
        // Stream queries (streams_admin_routes.cpp): counts from LMDB's entry counts and each
        // query's lag from its group's cursors; no state row is read.
        if (auto streams = read_stream_metrics(context, tenant.name)) {
            out.add("queen_stream_queries", "Stream queries registered in the tenant.", "gauge",
                    labels, static_cast<double>(streams->queries));
            out.add("queen_stream_state_rows",
                    "State rows of the tenant's stream queries, with rows of reset or deleted "
                    "queries not yet collected.",
                    "gauge", labels, static_cast<double>(streams->state_rows));
            for (const auto& [query, lag] : streams->lags) {
                out.add("queen_stream_lag_messages",
                        "Messages of a stream query's source queue its consumer group has not "
                        "consumed.",
                        "gauge", {{"tenant", tenant.name}, {"query", query}},
                        static_cast<double>(lag));
            }
        }
    }
    for (const MetricSample& sample : status.metrics) {
        out.add(sample.name, sample.help,
                sample.kind == MetricSample::Kind::counter ? "counter" : "gauge", sample.labels,
                sample.value);
    }
    for (const HistogramSample& sample : status.histograms) {
        out.add_histogram(sample);
    }
    Response response = Response::text(200, out.text(), "text/plain; version=0.0.4; charset=utf-8");
    response.headers.push_back(http::Header{"Cache-Control", "no-cache"});
    responder.complete(std::move(response));
}

}  // namespace

void register_health_routes(http::Router& router, const ContextPtr& context) {
    router.get("/health", make_handler(context, handle_health));
    router.get("/ready", make_handler(context, handle_ready));
    router.get("/metrics", make_handler(context, handle_metrics_json));
    router.get("/metrics/prometheus", make_handler(context, handle_prometheus));
}

}  // namespace queen::api::detail
