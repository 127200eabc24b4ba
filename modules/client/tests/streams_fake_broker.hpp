// client/tests/streams_fake_broker.hpp — an in-memory broker of the routes a StreamRunner uses
// (the wildcard pop with a consumer group and several partitions per lease, and POST
// /streams/v1/{queries,cycle,state/get}, optionally the admin listing) over the recording
// TestServer, following the contract of the streams endpoints, with knobs for the failures the
// runner must survive: a cycle applied whose answer is lost, a 503 before applying, leases that
// run out (a crashed runner's).
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "test_server.hpp"

namespace queen::client::testing {

struct SinkMessage {
    std::string partition;
    std::string transaction_id;
    std::string payload_json;
};

class FakeStreamsBroker {
public:
    FakeStreamsBroker();
    [[nodiscard]] Endpoint endpoint() const { return local(server_.port()); }

    /// Appends a message to queue/partition (created now + `created_at_ms` ms of epoch time).
    void push(const std::string& queue, const std::string& partition,
              const std::string& payload_json, std::int64_t created_at_ms = 1'700'000'000'000);
    /// The messages pushed to `queue` by cycles (duplicates by transactionId left out, as the
    /// broker does), in push order.
    [[nodiscard]] std::vector<SinkMessage> sink(const std::string& queue) const;
    /// The state rows of the query `name` in partition `partition` of its source (key -> JSON).
    [[nodiscard]] std::map<std::string, std::string> rows(const std::string& name,
                                                          const std::string& partition) const;
    [[nodiscard]] std::string partition_id(const std::string& queue,
                                           const std::string& partition) const;
    /// Messages of `queue` not yet acked by `group`.
    [[nodiscard]] std::size_t pending(const std::string& queue, const std::string& group) const;
    /// Messages of queue/partition `group` has acked (its cursor there): the committed prefix.
    [[nodiscard]] std::size_t acked(const std::string& queue, const std::string& partition,
                                    const std::string& group) const;
    /// Every lease runs out now (a runner that died holding them).
    void expire_leases();
    /// `queen admin streams reset name`: the query's state is gone, its epoch one more.
    void clear(const std::string& name);

    int cycles_applied = 0;  ///< committed cycles
    int cycles_refused = 0;  ///< answered success false
    int lose_answers = 0;    ///< the next N cycles are applied, then the connection closes
    int fail_before = 0;     ///< the next N cycles answer 503 without applying
    bool has_admin_route = false;
    /// When > 0, each pop's answer is cut to this many messages per partition.
    std::size_t pop_limit_per_partition = 0;

private:
    struct Stored {
        std::string transaction_id;
        std::string payload_json;
        std::int64_t created_at_ms = 0;
    };
    struct Partition {
        std::string id;
        std::string name;
        std::vector<Stored> messages;
        std::map<std::string, std::size_t> cursor;  // by group: the next message
        std::map<std::string, std::string> lease;   // by group: the lease holding it
    };
    struct Query {
        std::string id;
        std::string hash;
        int epoch = 1;
        // (epoch, partition id) -> key -> value JSON
        std::map<std::pair<int, std::string>, std::map<std::string, std::string>> rows;
    };

    Reply handle(const RecordedRequest& request);
    Reply pop(const std::string& queue, const std::map<std::string, std::string>& query);
    Reply register_query(const std::string& body);
    Reply cycle(const std::string& body);
    Reply state_get(const std::string& body);
    Reply admin_query(const std::string& name);
    Partition* find_partition(const std::string& id, std::string* queue);

    mutable std::mutex mutex_;
    std::map<std::string, std::map<std::string, Partition>> queues_;  // queue -> name -> it
    std::map<std::string, Query> queries_;                            // by name
    std::map<std::string, std::vector<SinkMessage>> sinks_;
    int next_id_ = 0;
    TestServer server_;
};

}  // namespace queen::client::testing
