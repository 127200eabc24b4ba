// queen/node/config.hpp — the settings of a node: one TOML file mapped onto the module Options
// structs.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "queen/api/api.hpp"
#include "queen/auth/auth.hpp"
#include "queen/config/schema.hpp"
#include "queen/core/logger.hpp"
#include "queen/core/result.hpp"
#include "queen/http/options.hpp"
#include "queen/log/options.hpp"
#include "queen/store/options.hpp"

namespace queen::node {

/// Identity and placement of this node.
struct NodeOptions {
    std::uint64_t id = 1;                     ///< unique within a cluster, > 0
    std::filesystem::path data_dir = "data";  ///< holds node.toml and tenants/<tenant>/
    /// Free space kept back on data_dir's file system: below it writes that add data answer 507
    /// (pops, acks and deletes go on), below a quarter of it every client write does; they
    /// resume by themselves when space returns. 0 = no check (then a full disk fails the log).
    std::uint64_t disk_reserve_bytes = std::uint64_t{256} << 20;
    /// Validate: id > 0, data_dir not empty.
    [[nodiscard]] Status validate() const;
};

/// How one tenant batches, applies and maintains its state.
struct TenantOptions {
    /// Commands in flight (appended to the log, not yet applied and answered); beyond it
    /// submit() fails with Errc::busy (HTTP 503).
    std::uint32_t proposals_max = 100'000;
    /// Reads waiting for the state to hold what was answered (each waits at most one LMDB
    /// commit; see state_commit_interval_us); beyond it a read gets Errc::busy (HTTP 503).
    std::uint32_t reads_waiting_max = 65'536;
    /// Committed commands the applier takes into one engine apply.
    std::uint32_t batch_entries_max = 4096;
    /// Encoded entry bytes the applier takes into one engine apply.
    std::uint64_t batch_bytes_max = std::uint64_t{8} << 20;
    /// How often the leader proposes a sweep (retention, ttl, eviction) entry.
    std::uint32_t sweep_interval_ms = 5'000;
    /// How long applied entries may wait in an open LMDB write txn for more to share its
    /// commit (their answers do not wait: they leave before the commit). Reads wait for the
    /// commit without holding a thread, and a waiting read brings it forward. 0 = commit after
    /// every apply batch. Waiting longer saves the copies of pages that several entries change (a
    /// partition's last leaf, its cursor, the indexes); appends gain nothing, so state_commit_bytes
    /// ends the wait early when entries are large.
    std::uint32_t state_commit_interval_us = 100'000;
    /// Encoded entry bytes an open LMDB write txn gathers before it commits, whatever the
    /// interval (the txn holds at most this plus one apply batch).
    std::uint64_t state_commit_bytes = std::uint64_t{1} << 20;
    /// How often LMDB is flushed to disk (fsync) so the log below it can be compacted.
    std::uint32_t state_sync_interval_ms = 1'000;
    /// Between checkpoints, how often the kernel is asked to start writing LMDB's dirty pages
    /// (spreads the disk writes; 0 = never).
    std::uint32_t state_writeback_interval_ms = 100;
    /// Log entries kept below the last durably applied index (for followers catching up).
    std::uint64_t log_retain_entries = 100'000;
    /// Validate ranges; errors name the tenant.* key.
    [[nodiscard]] Status validate() const;
};

/// One member of the cluster as `cluster.peers` names it: "<id>@<ip>:<port>".
struct PeerAddress {
    std::uint64_t id = 0;
    std::string host;  ///< numeric IP of its peer listener
    std::uint16_t port = 0;
};

/// The cluster this node belongs to (docs/cluster.md). With no peers the node is a one-node
/// cluster and nothing here matters.
struct ClusterOptions {
    /// Every founding member, this node included, the same list on every node; each tenant is a
    /// raft group over all of them. Empty: this node alone.
    std::vector<std::string> peers;
    /// This node joins a running cluster (`queen admin cluster add` named it first): `peers`
    /// lists this node and running members to reach (seeds); it founds no raft group, takes
    /// the cluster's key from a peer and waits for each group's leader to add it.
    bool join = false;
    /// Shared by every node; a peer that cannot prove it knows it is refused (at least 16
    /// bytes). Required with peers.
    std::string secret;
    /// The cluster's name; a node of another name is refused even with the same secret.
    std::string name = "queen";
    /// Raft's clock: one tick every tick_ms; a follower that hears no leader for
    /// [election_ticks, 2 * election_ticks) ticks starts an election; a leader sends
    /// heartbeats every heartbeat_ticks.
    std::uint32_t tick_ms = 50;
    std::uint32_t election_ticks = 20;
    std::uint32_t heartbeat_ticks = 2;
    /// A leader whose group had nothing to do for this many ticks in a row quiesces it: the
    /// group sends nothing until work or a peer node's failure wakes it; the nodes exchange one
    /// node heartbeat per heartbeat interval instead (docs/cluster.md, "Idle tenants").
    /// 0: groups never quiesce.
    std::uint32_t quiesce_ticks = 20;
    /// Applied entries (payload bytes) a tenant's raft member keeps in memory for peers that
    /// lag; a peer further behind gets a snapshot (docs/cluster.md, "Catching up").
    std::uint64_t raft_memory_bytes_max = std::uint64_t{64} << 20;
    /// A write that finds no leader (an election) waits this long for one, then fails with 503.
    std::uint32_t leader_wait_ms = 3'000;
    /// A command a follower forwarded to the leader fails with 503 after this without answer.
    std::uint32_t forward_timeout_ms = 5'000;
    /// Validate: peers parse, ids unique, this node among them, a secret, tick ranges.
    [[nodiscard]] Status validate(std::uint64_t self) const;
    /// `peers` parsed (validate() first). Errors: config::Errc::invalid_value naming the entry.
    [[nodiscard]] Result<std::vector<PeerAddress>> peer_addresses() const;
};

/// Diagnostics written by the process (not the commit log).
struct LoggingOptions {
    Level level = Level::info;
};

/// Everything `queen serve` reads. Defaults are the embedded single-node config.
struct NodeConfig {
    NodeOptions node;
    http::ServerOptions http;
    /// What one request of the Queen v1 API may carry (the settings bind its item limits; the
    /// node sets the key and the tenant names itself).
    api::ApiOptions api;
    /// Bearer tokens and roles (docs/security.md, "Authentication"); off by default.
    auth::Options auth;
    log::Options log;
    /// LMDB commits sync nothing; every tenant.state_sync_interval_ms the tenant takes an LMDB
    /// checkpoint (power-loss safe, store::SyncMode::checkpoint) and only then compacts the log
    /// up to it. The log is the durability point: a crash replays it from the checkpoint
    /// (docs/architecture.md, section 4).
    store::Options store = [] {
        store::Options options;
        options.sync_mode = store::SyncMode::checkpoint;
        return options;
    }();
    TenantOptions tenant;
    ClusterOptions cluster;
    LoggingOptions logging;
    /// The payload encryption key of queues with encryptionEnabled (docs/security.md). The
    /// first of these that is set wins: QUEEN_ENCRYPTION_KEY in the environment,
    /// encryption_key_hex, the file encryption_key_file, then <data_dir>/keys/payload.key,
    /// which the node creates at its first start.
    /// 64 hex digits (a 32-byte AES-256 key); empty = not given here.
    std::string encryption_key_hex;
    /// A file holding the key as 64 hex digits (mode 0600 or stricter); empty = not given. It
    /// must exist: the node creates only its data directory's key file.
    std::filesystem::path encryption_key_file;
    /// false: the node loads and creates no key, and pushes to queues with encryptionEnabled and
    /// reads of encrypted messages answer 500. A key must then not be given.
    bool is_payload_encryption_enabled = true;

    /// Checks every section; the error names the key path.
    [[nodiscard]] Status validate() const;
};

/// Declares every key of NodeConfig (with its comment) on `schema`, bound to `config`'s fields.
void bind_config(config::Schema& schema, NodeConfig& config);

}  // namespace queen::node
