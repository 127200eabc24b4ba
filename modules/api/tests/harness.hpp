// api/tests/harness.hpp — a Backend over a real engine::Engine (each command applied directly as
// one log entry, no log, no threads), a manual clock, a wait registry, and a driver that runs
// requests through the Router with detached responders.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "queen/api/api.hpp"
#include "queen/api/backend.hpp"
#include "queen/core/rng.hpp"
#include "queen/engine/command.hpp"
#include "queen/engine/engine.hpp"
#include "queen/http/router.hpp"
#include "queen/http/uri.hpp"
#include "queen/queues/queries.hpp"
#include "queen/testing/catch.hpp"
#include "queen/testing/support.hpp"
#include "seeded_random.hpp"

namespace queen::api::testing {

/// Applies every submitted command to an Engine at once (on the calling thread) and completes
/// synchronously. Time is manual: advance() moves both clocks, fires due wait deadlines, and
/// wakes every waiter once the engine's next_due passes (lease expiry, delays). fail_with() and
/// fail_next() make submits fail as a node's do during a leader change.
class EngineBackend final : public Backend {
public:
    explicit EngineBackend(const std::filesystem::path& dir) {
        engine::Options options;
        options.store.sync_mode = store::SyncMode::no_sync;
        auto opened = engine::Engine::open(dir, options);
        REQUIRE(opened.has_value());
        engine_ = std::make_unique<engine::Engine>(std::move(*opened));
    }

    void submit(std::string_view tenant, engine::Command command, Completion done) override {
        if (tenant != "default") {
            done(Error{Errc::not_found, "no such tenant"});
            return;
        }
        if (fail_with_.has_value()) {
            ++failed_;
            done(*fail_with_);
            return;
        }
        const engine::CommandType type = engine::command_type(command.body);
        const auto scripted =
            std::find_if(fail_next_.begin(), fail_next_.end(),
                         [type](const ScriptedFailure& failure) { return failure.type == type; });
        if (scripted != fail_next_.end()) {
            ++failed_;
            const Error error = scripted->error;
            if (--scripted->times == 0) {
                fail_next_.erase(scripted);
            }
            done(error);
            return;
        }
        ++submitted_;
        submitted_types_.push_back(type);
        const Bytes bytes = engine::encode_command(command);
        const engine::Entry entry{LogIndex{engine_->applied_index().value() + 1},
                                  TimestampMs{wall_ms_}, bytes};
        auto outcome = engine_->apply(std::span<const engine::Entry>(&entry, 1));
        if (!outcome) {
            done(std::move(outcome).error());
            return;
        }
        REQUIRE(outcome->results.size() == 1);
        auto result = engine::decode_result(outcome->results[0]);
        REQUIRE(result.has_value());
        done(std::move(*result));
        for (const queues::Wakeup& wakeup : outcome->wakeups) {
            wake_queue(wakeup.queue);
        }
    }

    void when_readable(std::string_view tenant, ReadReady ready) override {
        if (tenant != "default") {
            ready(Error{Errc::not_found, "no such tenant"});
            return;
        }
        if (is_deferring_reads_) {
            deferred_reads_.push_back(std::move(ready));
            return;
        }
        ready({});
    }

    /// While on, when_readable() keeps its callbacks until release_reads() (a read waiting for
    /// the state to catch up, as on a node whose applier has not committed yet).
    void defer_reads(bool is_on) { is_deferring_reads_ = is_on; }
    [[nodiscard]] std::size_t deferred_reads() const { return deferred_reads_.size(); }
    /// Calls the kept callbacks with `status` (ok by default), in order.
    void release_reads(const Status& status = {}) {
        auto reads = std::move(deferred_reads_);
        deferred_reads_.clear();
        for (auto& ready : reads) {
            ready(status);
        }
    }

    Status read(std::string_view tenant,
                const std::function<void(const engine::Engine&)>& fn) override {
        if (tenant != "default") {
            return Error{Errc::not_found, "no such tenant"};
        }
        fn(*engine_);
        return {};
    }

    class Token final : public WaitToken {
    public:
        Token(EngineBackend& backend, std::uint64_t id) : backend_(backend), id_(id) {}
        void cancel() override { backend_.cancel_wait(id_); }

    private:
        EngineBackend& backend_;
        std::uint64_t id_;
    };

    std::unique_ptr<WaitToken> wait_for_change(std::string_view tenant, std::string_view queue,
                                               std::int64_t deadline_ms,
                                               std::function<void(bool)> wake) override {
        REQUIRE(tenant == "default");
        std::lock_guard lock(mutex_);
        const std::uint64_t id = ++next_wait_id_;
        waits_.emplace(id, Wait{std::string(queue), deadline_ms, std::move(wake)});
        return std::make_unique<Token>(*this, id);
    }

    [[nodiscard]] std::int64_t now_ms() const override { return monotonic_ms_; }
    [[nodiscard]] std::int64_t wall_ms() const override { return wall_ms_; }

    [[nodiscard]] NodeStatus node_status() const override {
        NodeStatus status;
        status.version = "test";
        status.node_id = 7;
        status.uptime_ms = monotonic_ms_;
        status.is_ready = !is_poisoned_;
        status.not_ready_reason = is_poisoned_ ? "tenant default is poisoned" : "";
        TenantHealth tenant;
        tenant.name = "default";
        tenant.is_writable = !is_poisoned_;
        tenant.is_poisoned = is_poisoned_;
        tenant.reason = is_poisoned_ ? "fdatasync failed: EIO" : "";
        tenant.applied_index = engine_->applied_index().value();
        tenant.committed_index = tenant.applied_index;
        status.tenants.push_back(tenant);
        MetricSample sample;
        sample.name = "queen_log_appends_total";
        sample.help = "Entries appended.";
        sample.kind = MetricSample::Kind::counter;
        sample.labels = {{"tenant", "default"}};
        sample.value = static_cast<double>(submitted_);
        status.metrics.push_back(sample);
        HistogramSample histogram;
        histogram.name = "queen_fsync_latency_seconds";
        histogram.help = "fdatasync latency.";
        histogram.upper_bounds = {0.001, 0.01};
        histogram.cumulative_counts = {3, 5};
        histogram.count = 6;
        histogram.sum = 0.05;
        status.histograms.push_back(histogram);
        return status;
    }

    /// A raft group of nodes 7 (this node), 8 and 9 led by leader_id (0: an election), as far
    /// as transfer_leadership() is concerned: a transfer asked for is recorded, not carried out.
    Result<LeaderTransfer> transfer_leadership(std::string_view tenant,
                                               std::uint64_t target) override {
        if (tenant != "default") {
            return Error{Errc::not_found, "no such tenant"};
        }
        if (target < 7 || target > 9) {
            return Error{Errc::invalid_argument,
                         "node " + std::to_string(target) + " is not a voter of tenant 'default'"};
        }
        if (leader_id == 0) {
            return Error{Errc::not_leader, "no leader of tenant 'default' is known"};
        }
        LeaderTransfer transfer{false, leader_id, 3};
        if (target != leader_id) {
            transfer.is_started = true;
            transfers.push_back(target);
        }
        return transfer;
    }
    std::uint64_t leader_id = 7;
    std::vector<std::uint64_t> transfers;  ///< targets of the transfers asked for

    /// The tenant catalogue of that cluster of nodes 7, 8 and 9, in memory: the default tenant
    /// (on every node, this node leads it) and what create_tenant() added. Placement: the
    /// replicas of the n-th tenant created start at node 7 + n % 3. Completes at once.
    void create_tenant(std::string_view name, std::uint32_t replication, TenantDone done) override {
        if (catalogue_fail_with.has_value()) {
            done(*catalogue_fail_with);
            return;
        }
        if (!is_tenant_name(name)) {
            done(Error{Errc::invalid_argument, "bad tenant name"});
            return;
        }
        if (replication == 0) {
            replication = 3;
        }
        if (replication != 1 && replication != 3 && replication != 5) {
            done(Error{Errc::invalid_argument, "replication must be 1, 3 or 5"});
            return;
        }
        if (replication > 3) {
            done(Error{Errc::invalid_argument, "replication " + std::to_string(replication) +
                                                   " is more than the 3 nodes of the cluster"});
            return;
        }
        if (catalogue.contains(std::string(name))) {
            done(Error{Errc::already_exists, "created at " + std::to_string(wall_ms_)});
            return;
        }
        TenantInfo tenant;
        tenant.name = std::string(name);
        tenant.replication = replication;
        for (std::uint32_t i = 0; i < replication; ++i) {
            tenant.replicas.push_back(7 + (created_tenants_ + i) % 3);
        }
        tenant.is_hosted =
            std::find(tenant.replicas.begin(), tenant.replicas.end(), 7) != tenant.replicas.end();
        tenant.leader_id = tenant.is_hosted ? tenant.replicas.front() : 0;
        tenant.created_ms = wall_ms_;
        ++created_tenants_;
        ++catalogue_changes;
        catalogue[tenant.name] = tenant;
        done(std::move(tenant));
    }
    void delete_tenant(std::string_view name, std::function<void(Status)> done) override {
        if (catalogue_fail_with.has_value()) {
            done(*catalogue_fail_with);
            return;
        }
        if (name == "default") {
            done(Error{Errc::unsupported, "the default tenant cannot be deleted"});
            return;
        }
        const auto found = catalogue.find(std::string(name));
        if (found == catalogue.end()) {
            done(Error{Errc::not_found, "no such tenant in the catalogue"});
            return;
        }
        catalogue.erase(found);
        ++catalogue_changes;
        done({});
    }
    Result<std::vector<TenantInfo>> list_tenants() override {
        ++catalogue_reads;
        if (catalogue_fail_with.has_value()) {
            return *catalogue_fail_with;
        }
        std::vector<TenantInfo> out;
        for (const auto& [name, tenant] : catalogue) {
            out.push_back(tenant);
        }
        return out;
    }
    /// Rotates the replicas of the n-th tenant (by name) so that node 7 + n % 3 comes first
    /// when it is one of them.
    void rebalance(std::function<void(Result<std::vector<TenantInfo>>)> done) override {
        if (catalogue_fail_with.has_value()) {
            done(*catalogue_fail_with);
            return;
        }
        std::uint64_t n = 0;
        for (auto& [name, tenant] : catalogue) {
            const std::uint64_t preferred = 7 + n++ % 3;
            auto& replicas = tenant.replicas;
            const auto at = std::find(replicas.begin(), replicas.end(), preferred);
            if (at != replicas.end()) {
                std::rotate(replicas.begin(), at, replicas.end());
            }
        }
        ++catalogue_changes;
        done(list_tenants());
    }
    std::map<std::string, TenantInfo, std::less<>> catalogue = {
        {"default", TenantInfo{"default", 3, {7, 8, 9}, 7, true, 0}}};
    std::optional<Error> catalogue_fail_with;  ///< every catalogue call fails with it
    std::uint64_t catalogue_changes = 0;       ///< creates, deletes and rebalances carried out
    std::uint64_t catalogue_reads = 0;         ///< list_tenants() and list_members() calls

    /// The members of that cluster: nodes 7 (this node), 8 and 9, at 127.0.0.<id>:7<id>, all
    /// connected but 9; a member's `tenants` counts the catalogue tenants it replicates.
    /// add_member() and remove_member() change the list at once and count in member_calls
    /// (failed ones too); catalogue_fail_with fails them all.
    Result<std::vector<MemberInfo>> list_members() override {
        ++catalogue_reads;
        if (catalogue_fail_with.has_value()) {
            return *catalogue_fail_with;
        }
        std::vector<MemberInfo> out;
        for (auto [id, member] : members) {
            for (const auto& [name, tenant] : catalogue) {
                const auto& replicas = tenant.replicas;
                if (std::find(replicas.begin(), replicas.end(), id) != replicas.end()) {
                    ++member.tenants;
                }
            }
            out.push_back(member);
        }
        return out;
    }
    void add_member(std::uint64_t id, std::string peer_host, std::uint16_t peer_port,
                    MembersDone done) override {
        ++member_calls;
        if (catalogue_fail_with.has_value()) {
            done(*catalogue_fail_with);
            return;
        }
        if (members.contains(id)) {
            done(Error{Errc::already_exists, "a member with id " + std::to_string(id)});
            return;
        }
        for (const auto& [other, member] : members) {
            if (member.peer_host == peer_host && member.peer_port == peer_port) {
                done(Error{Errc::invalid_argument,
                           "node " + std::to_string(other) + " has that peer address"});
                return;
            }
        }
        members[id] = MemberInfo{id, std::move(peer_host), peer_port, false, false, 0};
        done(list_members());
    }
    void remove_member(std::uint64_t id, MembersDone done) override {
        ++member_calls;
        if (catalogue_fail_with.has_value()) {
            done(*catalogue_fail_with);
            return;
        }
        if (!members.contains(id)) {
            done(Error{Errc::not_found, "no member has that id"});
            return;
        }
        if (members.size() == 1) {
            done(Error{Errc::unsupported, "the last member cannot be removed"});
            return;
        }
        members.erase(id);
        for (auto& [name, tenant] : catalogue) {
            std::erase(tenant.replicas, id);
        }
        done(list_members());
    }
    std::map<std::uint64_t, MemberInfo> members = {
        {7, MemberInfo{7, "127.0.0.7", 7007, true, true, 0}},
        {8, MemberInfo{8, "127.0.0.8", 7008, false, true, 0}},
        {9, MemberInfo{9, "127.0.0.9", 7009, false, false, 0}}};
    std::uint64_t member_calls = 0;  ///< add_member() and remove_member() calls

    /// Moves both clocks; fires expired waits (timed_out) and, once next_due passed, wakes the
    /// others (a lease expired or a delay ended: pops may now find something).
    void advance(std::int64_t ms) {
        monotonic_ms_ += ms;
        wall_ms_ += ms;
        std::vector<std::function<void(bool)>> timed_out;
        std::vector<std::function<void(bool)>> due;
        const auto next = engine_->next_due();
        const bool is_due = next.has_value() && next->value() <= wall_ms_;
        {
            std::lock_guard lock(mutex_);
            for (auto it = waits_.begin(); it != waits_.end();) {
                if (it->second.deadline_ms <= monotonic_ms_) {
                    timed_out.push_back(std::move(it->second.wake));
                    it = waits_.erase(it);
                } else if (is_due) {
                    due.push_back(std::move(it->second.wake));
                    it = waits_.erase(it);
                } else {
                    ++it;
                }
            }
        }
        for (auto& wake : timed_out) {
            wake(true);
        }
        for (auto& wake : due) {
            wake(false);
        }
    }

    [[nodiscard]] std::size_t waiting() const {
        std::lock_guard lock(mutex_);
        return waits_.size();
    }
    [[nodiscard]] std::uint64_t submitted() const { return submitted_; }
    [[nodiscard]] const std::vector<engine::CommandType>& submitted_types() const {
        return submitted_types_;
    }
    void fail_with(std::optional<Error> error) { fail_with_ = std::move(error); }
    /// The next `times` submits of a `type` command fail with `error`; the others apply: a
    /// command that meets a leader change while the ones around it go through.
    void fail_next(engine::CommandType type, Error error, int times = 1) {
        REQUIRE(times > 0);
        fail_next_.push_back(ScriptedFailure{type, std::move(error), times});
    }
    /// Submits that fail_with() or fail_next() failed (submitted() counts the applied ones).
    [[nodiscard]] std::uint64_t failed() const { return failed_; }
    void set_poisoned(bool is_poisoned) { is_poisoned_ = is_poisoned; }
    [[nodiscard]] engine::Engine& engine() { return *engine_; }

private:
    struct ScriptedFailure {
        engine::CommandType type;
        Error error;
        int times = 0;
    };
    struct Wait {
        std::string queue;
        std::int64_t deadline_ms;
        std::function<void(bool)> wake;
    };

    void wake_queue(const std::string& queue) {
        std::vector<std::function<void(bool)>> woken;
        {
            std::lock_guard lock(mutex_);
            for (auto it = waits_.begin(); it != waits_.end();) {
                if (it->second.queue == queue) {
                    woken.push_back(std::move(it->second.wake));
                    it = waits_.erase(it);
                } else {
                    ++it;
                }
            }
        }
        for (auto& wake : woken) {
            wake(false);
        }
    }

    void cancel_wait(std::uint64_t id) {
        std::function<void(bool)> dropped;
        {
            std::lock_guard lock(mutex_);
            const auto found = waits_.find(id);
            if (found == waits_.end()) {
                return;
            }
            dropped = std::move(found->second.wake);
            waits_.erase(found);
        }
        // `dropped` (which may own the poll) is destroyed here, outside the lock.
    }

    std::unique_ptr<engine::Engine> engine_;
    std::int64_t monotonic_ms_ = 1'000'000;
    std::int64_t wall_ms_ = 1'700'000'000'000;
    std::uint64_t submitted_ = 0;
    std::vector<engine::CommandType> submitted_types_;
    std::optional<Error> fail_with_;
    std::vector<ScriptedFailure> fail_next_;
    std::uint64_t failed_ = 0;
    bool is_poisoned_ = false;
    bool is_deferring_reads_ = false;
    std::vector<ReadReady> deferred_reads_;
    mutable std::mutex mutex_;
    std::map<std::uint64_t, Wait> waits_;
    std::uint64_t next_wait_id_ = 0;
    std::uint64_t created_tenants_ = 0;
};

/// One of `choices`, uniformly (randomized test inputs).
inline std::string pick(Rng& rng, const std::vector<std::string>& choices) {
    return choices[rng.below(choices.size())];
}

/// The answer of one request; `is_done` once the responder completed.
struct Reply {
    bool is_done = false;
    int status = 0;
    std::string content_type;
    std::vector<http::Header> headers;
    std::string body;

    [[nodiscard]] nlohmann::json json() const {
        INFO("body: " << body);
        REQUIRE_FALSE(body.empty());
        return nlohmann::json::parse(body);
    }
};

/// The reply carries Retry-After: 1 (a 503 to retry).
inline bool has_retry_after(const Reply& reply) {
    return std::any_of(reply.headers.begin(), reply.headers.end(), [](const http::Header& h) {
        return h.name == "Retry-After" && h.value == "1";
    });
}

/// Routes requests to register_routes() over an EngineBackend.
class Harness {
public:
    explicit Harness(ApiOptions options = {}, std::uint64_t seed = 1)
        : backend(dir.path()), random(seed) {
        register_routes(router, backend, options, NullLogger::instance(), random);
    }

    struct Pending {
        std::shared_ptr<Reply> reply;
        http::Responder responder;
    };

    /// Sends a request; the reply may complete now or later (long polls).
    Pending start(http::Method method, std::string_view target, std::string body = {},
                  std::vector<http::Header> headers = {}) {
        http::Request request;
        request.method = method;
        request.method_name = std::string(http::method_name(method));
        request.target = std::string(target);
        const auto question = target.find('?');
        request.path = std::string(target.substr(0, question));
        request.raw_query = question == std::string_view::npos
                                ? std::string()
                                : std::string(target.substr(question + 1));
        auto segments = http::decode_path(request.path);
        REQUIRE(segments.has_value());
        request.segments = std::move(*segments);
        auto query = http::decode_query(request.raw_query);
        REQUIRE(query.has_value());
        request.query = std::move(*query);
        request.headers = std::move(headers);
        request.body = std::move(body);
        auto reply = std::make_shared<Reply>();
        http::Responder responder = http::Responder::detached([reply](http::Response response) {
            reply->is_done = true;
            reply->status = response.status;
            reply->content_type = response.content_type;
            reply->headers = response.headers;
            reply->body = response.body;
        });
        if (front) {
            front(request, responder);
        } else {
            router.handle(request, responder);
        }
        return Pending{reply, responder};
    }

    /// Sends a request that must complete at once.
    Reply call(http::Method method, std::string_view target, std::string body = {},
               std::vector<http::Header> headers = {}) {
        auto pending = start(method, target, std::move(body), std::move(headers));
        INFO(http::method_name(method) << " " << target);
        REQUIRE(pending.reply->is_done);
        return *pending.reply;
    }

    Reply get(std::string_view target) { return call(http::Method::get, target); }
    Reply post(std::string_view target, const nlohmann::json& body) {
        return call(http::Method::post, target, body.dump());
    }
    Reply post_raw(std::string_view target, std::string body) {
        return call(http::Method::post, target, std::move(body));
    }
    Reply del(std::string_view target) { return call(http::Method::delete_, target); }

    /// Pushes `payloads` to queue/partition and checks they were queued.
    nlohmann::json push(std::string_view queue, std::string_view partition,
                        const std::vector<nlohmann::json>& payloads) {
        nlohmann::json items = nlohmann::json::array();
        for (const auto& payload : payloads) {
            items.push_back({{"queue", queue}, {"partition", partition}, {"payload", payload}});
        }
        const Reply reply = post("/api/v1/push", {{"items", items}});
        REQUIRE(reply.status == 201);
        return reply.json();
    }

    /// The stored message (partition id and transaction id as the API answered them), read
    /// straight from the engine; it must exist.
    queues::MessageDetail stored_message(const std::string& partition_id,
                                         const std::string& transaction_id) {
        auto stored =
            backend.engine().read([&](const queues::Tables& tables, const store::Txn& txn) {
                return queues::get_message(tables, txn, queues::parse_partition_id(partition_id),
                                           transaction_id, TimestampMs{0});
            });
        REQUIRE(stored.has_value());
        REQUIRE(stored->has_value());
        return std::move(**stored);
    }

    queen::testing::TempDir dir;
    EngineBackend backend;
    SeededRandom random;
    http::Router router;
    /// When set, requests go through it (e.g. with_authentication around `router`).
    http::Handler front;
};

/// A catalogue list at `route` (tenants, members) waits until the state is readable, then reads
/// the catalogue once; a wait that fails with `failure` (retryable) answers 503 with
/// Retry-After: 1 and reads nothing.
inline void check_catalogue_list_waits_for_state(Harness& h, std::string_view route,
                                                 const Error& failure) {
    h.backend.defer_reads(true);
    auto pending = h.start(http::Method::get, route);
    CHECK_FALSE(pending.reply->is_done);
    CHECK(h.backend.catalogue_reads == 0);  // not read before the state is readable
    h.backend.release_reads();
    REQUIRE(pending.reply->is_done);
    CHECK(pending.reply->status == 200);
    CHECK(h.backend.catalogue_reads == 1);

    auto failed = h.start(http::Method::get, route);
    h.backend.release_reads(failure);
    REQUIRE(failed.reply->is_done);
    CHECK(failed.reply->status == 503);
    CHECK(has_retry_after(*failed.reply));
    CHECK(h.backend.catalogue_reads == 1);
}

}  // namespace queen::api::testing
