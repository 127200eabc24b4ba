// client/tests/streams_fake_broker.cpp — see streams_fake_broker.hpp.
#include "streams_fake_broker.hpp"

#include <nlohmann/json.hpp>

#include "queen/core/iso_time.hpp"

namespace queen::client::testing {

using Json = nlohmann::json;

namespace {

std::string iso(std::int64_t ms) {
    char out[iso_time_bytes_max];
    return std::string(out, write_iso_time(out, ms, false));
}

Reply answer(const Json& body) {
    return json_reply(200, body.dump());
}

// "a=1&b=2" after the '?' of `target`, undecoded (the runner's values need no decoding).
std::map<std::string, std::string> query_of(const std::string& target) {
    std::map<std::string, std::string> out;
    const auto question = target.find('?');
    if (question == std::string::npos) {
        return out;
    }
    std::string rest = target.substr(question + 1);
    while (!rest.empty()) {
        const auto amp = rest.find('&');
        const std::string pair = rest.substr(0, amp);
        const auto eq = pair.find('=');
        out[pair.substr(0, eq)] = eq == std::string::npos ? "" : pair.substr(eq + 1);
        rest = amp == std::string::npos ? "" : rest.substr(amp + 1);
    }
    return out;
}

}  // namespace

FakeStreamsBroker::FakeStreamsBroker() {
    server_.set_handler([this](const RecordedRequest& request) { return handle(request); });
}

void FakeStreamsBroker::push(const std::string& queue, const std::string& partition,
                             const std::string& payload_json, std::int64_t created_at_ms) {
    const std::lock_guard lock{mutex_};
    Partition& stored = queues_[queue][partition];
    if (stored.id.empty()) {
        char id[40];
        std::snprintf(id, sizeof id, "00000000-0000-4000-8000-%012d", ++next_id_);
        stored.id = id;
        stored.name = partition;
    }
    stored.messages.push_back(
        Stored{"tx-" + std::to_string(++next_id_), payload_json, created_at_ms});
}

std::vector<SinkMessage> FakeStreamsBroker::sink(const std::string& queue) const {
    const std::lock_guard lock{mutex_};
    const auto found = sinks_.find(queue);
    return found == sinks_.end() ? std::vector<SinkMessage>{} : found->second;
}

std::map<std::string, std::string> FakeStreamsBroker::rows(const std::string& name,
                                                           const std::string& partition) const {
    const std::lock_guard lock{mutex_};
    const auto query = queries_.find(name);
    if (query == queries_.end()) {
        return {};
    }
    for (const auto& [queue, partitions] : queues_) {
        const auto found = partitions.find(partition);
        if (found == partitions.end()) {
            continue;
        }
        const auto rows = query->second.rows.find({query->second.epoch, found->second.id});
        if (rows != query->second.rows.end()) {
            return rows->second;
        }
    }
    return {};
}

std::string FakeStreamsBroker::partition_id(const std::string& queue,
                                            const std::string& partition) const {
    const std::lock_guard lock{mutex_};
    const auto found = queues_.find(queue);
    if (found == queues_.end() || !found->second.contains(partition)) {
        return {};
    }
    return found->second.at(partition).id;
}

std::size_t FakeStreamsBroker::pending(const std::string& queue, const std::string& group) const {
    const std::lock_guard lock{mutex_};
    std::size_t count = 0;
    const auto found = queues_.find(queue);
    if (found == queues_.end()) {
        return 0;
    }
    for (const auto& [name, partition] : found->second) {
        const auto cursor = partition.cursor.find(group);
        count +=
            partition.messages.size() - (cursor == partition.cursor.end() ? 0 : cursor->second);
    }
    return count;
}

std::size_t FakeStreamsBroker::acked(const std::string& queue, const std::string& partition,
                                     const std::string& group) const {
    const std::lock_guard lock{mutex_};
    const auto found = queues_.find(queue);
    if (found == queues_.end() || !found->second.contains(partition)) {
        return 0;
    }
    const auto& cursors = found->second.at(partition).cursor;
    const auto cursor = cursors.find(group);
    return cursor == cursors.end() ? 0 : cursor->second;
}

void FakeStreamsBroker::expire_leases() {
    const std::lock_guard lock{mutex_};
    for (auto& [queue, partitions] : queues_) {
        for (auto& [name, partition] : partitions) {
            partition.lease.clear();
        }
    }
}

void FakeStreamsBroker::clear(const std::string& name) {
    const std::lock_guard lock{mutex_};
    ++queries_.at(name).epoch;
}

FakeStreamsBroker::Partition* FakeStreamsBroker::find_partition(const std::string& id,
                                                                std::string* queue) {
    for (auto& [queue_name, partitions] : queues_) {
        for (auto& [name, partition] : partitions) {
            if (partition.id == id) {
                *queue = queue_name;
                return &partition;
            }
        }
    }
    return nullptr;
}

Reply FakeStreamsBroker::handle(const RecordedRequest& request) {
    const std::lock_guard lock{mutex_};
    const std::string path = request.target.substr(0, request.target.find('?'));
    const std::string pop_prefix = "/api/v1/pop/queue/";
    const std::string admin_prefix = "/api/v1/streams/queries/";
    if (request.method == "GET" && path.rfind(pop_prefix, 0) == 0) {
        return pop(path.substr(pop_prefix.size()), query_of(request.target));
    }
    if (request.method == "GET" && path.rfind(admin_prefix, 0) == 0) {
        return admin_query(path.substr(admin_prefix.size()));
    }
    if (path == "/streams/v1/queries") {
        return register_query(request.body);
    }
    if (path == "/streams/v1/cycle") {
        return cycle(request.body);
    }
    if (path == "/streams/v1/state/get") {
        return state_get(request.body);
    }
    return json_reply(404, R"({"error":"not found"})");
}

Reply FakeStreamsBroker::pop(const std::string& queue,
                             const std::map<std::string, std::string>& query) {
    const std::string group = query.contains("consumerGroup") ? query.at("consumerGroup") : "";
    const std::size_t batch = std::stoul(query.at("batch"));
    const std::size_t partitions_max =
        query.contains("partitions") ? std::stoul(query.at("partitions")) : 1;
    const std::string lease = "lease-" + std::to_string(++next_id_);
    Json messages = Json::array();
    std::size_t claimed = 0;
    for (auto& [name, partition] : queues_[queue]) {
        std::size_t& cursor = partition.cursor[group];
        if (claimed == partitions_max || messages.size() == batch ||
            cursor == partition.messages.size() || !partition.lease[group].empty()) {
            continue;
        }
        ++claimed;
        partition.lease[group] = lease;
        for (std::size_t at = cursor, taken = 0;
             at < partition.messages.size() && messages.size() < batch &&
             (pop_limit_per_partition == 0 || taken < pop_limit_per_partition);
             ++at, ++taken) {
            const Stored& message = partition.messages[at];
            messages.push_back(Json{{"id", "m-" + message.transaction_id},
                                    {"transactionId", message.transaction_id},
                                    {"data", Json::parse(message.payload_json)},
                                    {"createdAt", iso(message.created_at_ms)},
                                    {"partitionId", partition.id},
                                    {"partition", partition.name},
                                    {"leaseId", lease},
                                    {"consumerGroup", group},
                                    {"queue", queue},
                                    {"retryCount", 0}});
        }
    }
    if (messages.empty()) {
        return no_content_reply();
    }
    return answer(Json{{"messages", messages},
                       {"queue", queue},
                       {"leaseId", lease},
                       {"consumerGroup", group},
                       {"partitionsClaimed", claimed}});
}

Reply FakeStreamsBroker::register_query(const std::string& body) {
    const Json request = Json::parse(body);
    const std::string name = request.at("name");
    const std::string hash = request.at("config_hash");
    auto [query, is_fresh] = queries_.try_emplace(name);
    bool is_reset = false;
    if (is_fresh) {
        query->second.id = "q-" + std::to_string(++next_id_);
        query->second.hash = hash;
    } else if (query->second.hash != hash) {
        if (!request.value("reset", false)) {
            return json_reply(409, Json{{"success", false},
                                        {"error",
                                         "config_hash mismatch: operator chain changed "
                                         "for queryId '" +
                                             name + "'"}}
                                       .dump());
        }
        ++query->second.epoch;
        query->second.hash = hash;
        is_reset = true;
    }
    return answer(Json{{"success", true},
                       {"query_id", query->second.id},
                       {"name", name},
                       {"config_hash", hash},
                       {"fresh", is_fresh},
                       {"reset", is_reset},
                       {"epoch", query->second.epoch}});
}

Reply FakeStreamsBroker::cycle(const std::string& body) {
    if (fail_before > 0) {
        --fail_before;
        return json_reply(503, R"({"error":"try later"})");
    }
    const Json request = Json::parse(body);
    const auto refuse = [&](const std::string& why) {
        ++cycles_refused;
        return answer(Json{{"success", false}, {"error", why}});
    };
    Query* query = nullptr;
    for (auto& [name, candidate] : queries_) {
        query = candidate.id == request.at("query_id") ? &candidate : query;
    }
    if (query == nullptr) {
        return refuse("unknown query");
    }
    if (request.value("epoch", 0) != 0 && request.at("epoch") != query->epoch) {
        return refuse("epoch mismatch: the query was reset or cleared");
    }
    std::string queue;
    Partition* partition = find_partition(request.at("partition_id"), &queue);
    if (partition == nullptr) {
        return refuse("unknown partition");
    }
    const std::string group = request.at("consumer_group");
    std::size_t acked = 0;
    if (request.contains("ack")) {
        const Json& ack = request.at("ack");
        if (ack.at("leaseId") != partition->lease[group]) {
            return refuse("Invalid or expired lease");
        }
        const std::size_t cursor = partition->cursor[group];
        acked = cursor;
        while (acked < partition->messages.size() &&
               partition->messages[acked].transaction_id != ack.at("transactionId")) {
            ++acked;
        }
        if (acked == partition->messages.size()) {
            return refuse("Message not found");
        }
    }
    auto& rows = query->rows[{query->epoch, partition->id}];
    // The checks first, as the broker applies ops in order and takes everything back on a
    // failed one (no op of the runner writes a key before checking it).
    for (const auto& op : request.at("state_ops")) {
        if (op.at("type") != "check") {
            continue;
        }
        const auto row = rows.find(op.at("key").get<std::string>());
        const bool holds = op.contains("value")
                               ? row != rows.end() && Json::parse(row->second) == op.at("value")
                               : row == rows.end();
        if (!holds) {
            return refuse("state check failed on '" + op.at("key").get<std::string>() + "'");
        }
    }
    for (const auto& op : request.at("state_ops")) {
        if (op.at("type") == "check") {
            continue;
        }
        if (op.at("type") == "upsert") {
            rows[op.at("key")] = op.at("value").dump();
        } else {
            rows.erase(op.at("key").get<std::string>());
        }
    }
    for (const auto& item : request.at("push_items")) {
        auto& sink = sinks_[item.at("queue")];
        const std::string partition_name = item.value("partition", "Default");
        const std::string id = item.at("transactionId");
        bool is_duplicate = false;
        for (const auto& existing : sink) {
            is_duplicate |= existing.partition == partition_name && existing.transaction_id == id;
        }
        if (!is_duplicate) {
            sink.push_back(SinkMessage{partition_name, id, item.at("payload").dump()});
        }
    }
    if (request.contains("ack")) {
        partition->cursor[group] = acked + 1;
        if (request.value("release_lease", true)) {
            partition->lease[group].clear();
        }
    }
    ++cycles_applied;
    if (lose_answers > 0) {
        --lose_answers;
        return close_reply();
    }
    return answer(Json{{"success", true}, {"state_ops_applied", request.at("state_ops").size()}});
}

Reply FakeStreamsBroker::state_get(const std::string& body) {
    const Json request = Json::parse(body);
    Json rows = Json::array();
    for (auto& [name, query] : queries_) {
        if (query.id != request.at("query_id")) {
            continue;
        }
        const auto found = query.rows.find({query.epoch, request.at("partition_id")});
        if (found == query.rows.end()) {
            break;
        }
        for (const auto& [key, value] : found->second) {
            rows.push_back(Json{{"key", key}, {"value", Json::parse(value)}, {"updated_at", 0}});
        }
    }
    return answer(Json{{"success", true}, {"rows", rows}});
}

Reply FakeStreamsBroker::admin_query(const std::string& name) {
    const auto query = queries_.find(name);
    if (!has_admin_route || query == queries_.end()) {
        return json_reply(404, R"({"error":"not found"})");
    }
    Json partitions = Json::array();
    for (const auto& [key, rows] : query->second.rows) {
        if (key.first == query->second.epoch && !rows.empty()) {
            partitions.push_back(Json{{"partition_id", key.second}, {"rows", rows.size()}});
        }
    }
    return answer(Json{{"name", name}, {"query_id", query->second.id}, {"partitions", partitions}});
}

}  // namespace queen::client::testing
