// api/tests/streams_admin_routes_test.cpp — the streams admin routes through the Router over a
// real engine: the listing (name order, paging, lag), one query with its rows per partition,
// reset (a new epoch, the id kept, cycles go on) and delete (a new registration is a new
// query), 404s and 400s, and the Prometheus block (queries, rows with the uncollected ones,
// lag). Queries and rows are written with the engine's commands (the /streams/v1 routes are
// another file's).
#include "harness.hpp"
#include "json.hpp"
#include "queen/engine/command.hpp"

namespace queen::api::testing {
namespace {

using nlohmann::json;

/// Applies `body` as one entry and returns its result, which must be an R.
template <class R, class Body>
R apply(Harness& h, Body body) {
    engine::Command command;
    command.body = std::move(body);
    std::optional<R> out;
    h.backend.submit("default", std::move(command), [&](Result<engine::CommandResult> result) {
        REQUIRE(result.has_value());
        REQUIRE(std::holds_alternative<R>(*result));
        out = std::get<R>(std::move(*result));
    });
    REQUIRE(out.has_value());
    return std::move(*out);
}

streams::RegisterResult register_query(Harness& h, const std::string& name,
                                       const std::string& source, const std::string& sink,
                                       const std::string& query_id) {
    engine::StreamRegister command;
    command.query = streams::Register{name, source, sink, "hash-1", false, query_id};
    return apply<engine::StreamRegisterResult>(h, command).result;
}

/// A cycle without an ack that upserts `keys` into `partition`.
engine::StreamCycleResult upsert(Harness& h, const std::string& query_id, std::uint64_t partition,
                                 const std::vector<std::string>& keys) {
    engine::StreamCycle cycle;
    cycle.query_id = query_id;
    cycle.partition = queues::PartitionId{partition};
    for (const std::string& key : keys) {
        cycle.state_ops.push_back({engine::StreamStateOp::Kind::upsert, key, Bytes{'1'}});
    }
    return apply<engine::StreamCycleResult>(h, cycle);
}

std::string partition_id(std::uint64_t partition) {
    return queues::format_partition_id(queues::PartitionId{partition});
}

/// The value of the sample `line_start` ("name{labels}") in a Prometheus text, or -1 if absent.
double sample(const std::string& text, const std::string& line_start) {
    const std::string needle = "\n" + line_start + " ";
    const auto at = text.find(needle);
    if (at == std::string::npos) {
        return -1;
    }
    return std::stod(text.substr(at + needle.size()));
}

TEST_CASE("streams admin: list, show, lag, reset and delete over real state",
          "[api][streams][admin]") {
    Harness h;
    CHECK(h.get("/api/v1/streams/queries").json() ==
          json::parse(R"({"queries":[],"nextAfter":null})"));

    REQUIRE(register_query(h, "totals", "events", "sums", "id-totals").status ==
            streams::Status::fresh);
    REQUIRE(register_query(h, "alpha", "raw", "", "id-alpha").status == streams::Status::fresh);
    REQUIRE(upsert(h, "id-totals", 3, {"a", "b"}).success);
    REQUIRE(upsert(h, "id-totals", 9, {"c"}).success);
    h.push("events", "p1", {json(1), json(2), json(3)});
    h.push("events", "p2", {json(4), json(5)});

    // The lag: every message, the group has consumed nothing. Then the runner's group consumes
    // two (a plain consumer moves nothing).
    const json listed = h.get("/api/v1/streams/queries").json();
    REQUIRE(listed["queries"].size() == 2);
    CHECK(listed["nextAfter"].is_null());
    const json& alpha = listed["queries"][0];
    CHECK(alpha["name"] == "alpha");
    CHECK(alpha["sink_queue"].is_null());
    CHECK(alpha["lag"] == 0);  // its queue does not exist
    const json& totals = listed["queries"][1];
    CHECK(totals["name"] == "totals");
    CHECK(totals["query_id"] == "id-totals");
    CHECK(totals["source_queue"] == "events");
    CHECK(totals["sink_queue"] == "sums");
    CHECK(totals["config_hash"] == "hash-1");
    CHECK(totals["epoch"] == 1);
    CHECK(totals["created_at"] == api::detail::format_iso_ms(h.backend.wall_ms()));
    CHECK(totals["updated_at"] == totals["created_at"]);
    CHECK(totals["lag"] == 5);
    const Reply popped = h.get(
        "/api/v1/pop/queue/events/partition/p1?batch=2&autoAck=true"
        "&consumerGroup=streams.totals");
    REQUIRE(popped.status == 200);
    REQUIRE(popped.json()["messages"].size() == 2);
    REQUIRE(h.get("/api/v1/pop/queue/events/partition/p2?batch=2&autoAck=true").status == 200);
    CHECK(h.get("/api/v1/streams/queries").json()["queries"][1]["lag"] == 3);

    // Paging by name.
    const json first = h.get("/api/v1/streams/queries?limit=1").json();
    REQUIRE(first["queries"].size() == 1);
    CHECK(first["queries"][0]["name"] == "alpha");
    CHECK(first["nextAfter"] == "alpha");
    const json second = h.get("/api/v1/streams/queries?limit=1&after=alpha").json();
    REQUIRE(second["queries"].size() == 1);
    CHECK(second["queries"][0]["name"] == "totals");
    CHECK(second["nextAfter"].is_null());

    // One query: the listing's fields, its rows and the partitions that hold any.
    const json shown = h.get("/api/v1/streams/queries/totals").json();
    CHECK(shown["query_id"] == "id-totals");
    CHECK(shown["lag"] == 3);
    CHECK(shown["rows"] == 3);
    CHECK(shown["partitions"] == json::array({{{"partition_id", partition_id(3)}, {"rows", 2}},
                                              {{"partition_id", partition_id(9)}, {"rows", 1}}}));
    const json empty = h.get("/api/v1/streams/queries/alpha").json();
    CHECK(empty["rows"] == 0);
    CHECK(empty["partitions"] == json::array());

    // The metrics: rows from LMDB's count.
    std::string metrics = h.get("/metrics/prometheus").body;
    CHECK(sample(metrics, R"(queen_stream_queries{tenant="default"})") == 2);
    CHECK(sample(metrics, R"(queen_stream_state_rows{tenant="default"})") == 3);
    CHECK(sample(metrics, R"(queen_stream_lag_messages{tenant="default",query="totals"})") == 3);
    CHECK(sample(metrics, R"(queen_stream_lag_messages{tenant="default",query="alpha"})") == 0);

    // Reset: a new epoch, the same id, no rows; cycles go on.
    h.backend.advance(1000);
    const Reply reset = h.post("/api/v1/streams/queries/totals/reset", json::object());
    REQUIRE(reset.status == 200);
    CHECK(reset.json() ==
          json({{"success", true}, {"name", "totals"}, {"query_id", "id-totals"}, {"epoch", 2}}));
    const json after_reset = h.get("/api/v1/streams/queries/totals").json();
    CHECK(after_reset["epoch"] == 2);
    CHECK(after_reset["rows"] == 0);
    CHECK(after_reset["partitions"] == json::array());
    CHECK(after_reset["updated_at"] == api::detail::format_iso_ms(h.backend.wall_ms()));
    CHECK(after_reset["created_at"] == totals["created_at"]);
    // The old epoch's rows are counted until a Due entry deletes them.
    metrics = h.get("/metrics/prometheus").body;
    CHECK(sample(metrics, R"(queen_stream_state_rows{tenant="default"})") == 3);
    CHECK(apply<engine::DueResult>(h, engine::Due{}).stream_rows_collected == 3);
    metrics = h.get("/metrics/prometheus").body;
    CHECK(sample(metrics, R"(queen_stream_state_rows{tenant="default"})") == 0);
    REQUIRE(upsert(h, "id-totals", 4, {"d"}).success);
    CHECK(h.get("/api/v1/streams/queries/totals").json()["partitions"] ==
          json::array({{{"partition_id", partition_id(4)}, {"rows", 1}}}));

    // Delete: gone; the name registered again is a new query.
    const Reply deleted = h.del("/api/v1/streams/queries/totals");
    REQUIRE(deleted.status == 200);
    CHECK(deleted.json() == json({{"success", true}, {"name", "totals"}}));
    const Reply gone = h.get("/api/v1/streams/queries/totals");
    CHECK(gone.status == 404);
    CHECK(gone.json() == json({{"error", "stream query 'totals' not found"}}));
    CHECK(h.get("/api/v1/streams/queries").json()["queries"].size() == 1);
    CHECK(h.del("/api/v1/streams/queries/totals").status == 404);
    CHECK(h.post("/api/v1/streams/queries/totals/reset", json::object()).status == 404);
    const auto again = register_query(h, "totals", "events", "", "id-totals-2");
    CHECK(again.status == streams::Status::fresh);
    const json fresh = h.get("/api/v1/streams/queries/totals").json();
    CHECK(fresh["query_id"] == "id-totals-2");
    CHECK(fresh["epoch"] == 1);
    CHECK(fresh["rows"] == 0);
    metrics = h.get("/metrics/prometheus").body;
    CHECK(sample(metrics, R"(queen_stream_queries{tenant="default"})") == 2);
}

TEST_CASE("streams admin: bad names and paging are 400, unknown queries 404, nothing submitted",
          "[api][streams][admin]") {
    Harness h;
    const std::uint64_t before = h.backend.submitted();
    const std::string long_name(257, 'n');
    const Reply reset_unknown = h.post("/api/v1/streams/queries/nope/reset", json::object());
    CHECK(reset_unknown.status == 404);
    CHECK(reset_unknown.json()["error"] == "stream query 'nope' not found");
    CHECK(h.del("/api/v1/streams/queries/nope").status == 404);
    CHECK(h.get("/api/v1/streams/queries/nope").status == 404);
    const std::uint64_t unknown_submits = h.backend.submitted() - before;
    CHECK(unknown_submits == 2);  // the reset and the delete were asked of the state machine
    CHECK(h.get("/api/v1/streams/queries/" + long_name).status == 400);
    CHECK(h.post("/api/v1/streams/queries/" + long_name + "/reset", json::object()).status == 400);
    CHECK(h.del("/api/v1/streams/queries/" + long_name).status == 400);
    CHECK(h.get("/api/v1/streams/queries?limit=0").status == 400);
    CHECK(h.get("/api/v1/streams/queries?limit=1001").status == 400);
    CHECK(h.get("/api/v1/streams/queries?limit=x").status == 400);
    CHECK(h.get("/api/v1/streams/queries?after=" + long_name).status == 400);
    CHECK(h.backend.submitted() - before == unknown_submits);
}

}  // namespace
}  // namespace queen::api::testing
