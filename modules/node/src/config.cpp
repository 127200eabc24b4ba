// modules/node/src/config.cpp — the node's TOML schema and validation.
#include "queen/node/config.hpp"

#include <algorithm>

#include "queen/core/hex.hpp"

namespace queen::node {
namespace {
Status prefixed(Status status, std::string_view section) {
    if (status) {
        return status;
    }
    Error error = std::move(status).error();
    error.context = std::string(section) + ": " + error.context;
    return error;
}
}  // namespace

Status NodeOptions::validate() const {
    if (id == 0) {
        return Error{config::Errc::out_of_range, "node.id must be greater than 0"};
    }
    if (data_dir.empty()) {
        return Error{config::Errc::invalid_value, "node.data_dir must not be empty"};
    }
    return {};
}

Status TenantOptions::validate() const {
    if (proposals_max == 0 || reads_waiting_max == 0 || batch_entries_max == 0 ||
        batch_bytes_max == 0 || state_commit_bytes == 0) {
        return Error{config::Errc::out_of_range,
                     "tenant.proposals_max, reads_waiting_max, batch_entries_max, "
                     "batch_bytes_max and state_commit_bytes must be > 0"};
    }
    if (sweep_interval_ms == 0 || state_sync_interval_ms == 0) {
        return Error{config::Errc::out_of_range,
                     "tenant.sweep_interval_ms and state_sync_interval_ms must be > 0"};
    }
    return {};
}

Result<std::vector<PeerAddress>> ClusterOptions::peer_addresses() const {
    std::vector<PeerAddress> out;
    for (const std::string& text : peers) {
        const auto bad = [&](const char* why) {
            return Error{config::Errc::invalid_value,
                         "cluster.peers: \"" + text + "\" " + why + " (want <id>@<ip>:<port>)"};
        };
        const auto at = text.find('@');
        const auto colon = text.rfind(':');
        if (at == std::string::npos || colon == std::string::npos || colon < at) {
            return bad("is not id@ip:port");
        }
        PeerAddress peer;
        const std::string id = text.substr(0, at);
        const std::string port = text.substr(colon + 1);
        peer.host = text.substr(at + 1, colon - at - 1);
        const auto is_digits = [](const std::string& s) {
            return !s.empty() && s.size() <= 19 &&
                   std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
        };
        if (!is_digits(id) || !is_digits(port) || peer.host.empty()) {
            return bad("is not id@ip:port");
        }
        peer.id = std::stoull(id);
        const auto port_value = std::stoull(port);
        if (peer.id == 0 || port_value == 0 || port_value > 65535) {
            return bad("needs an id > 0 and a port in 1..65535");
        }
        peer.port = static_cast<std::uint16_t>(port_value);
        out.push_back(std::move(peer));
    }
    return out;
}

Status ClusterOptions::validate(std::uint64_t self) const {
    if (tick_ms == 0 || election_ticks < 2 || heartbeat_ticks == 0 ||
        heartbeat_ticks >= election_ticks) {
        return Error{config::Errc::out_of_range,
                     "cluster.tick_ms must be > 0, election_ticks >= 2 and heartbeat_ticks in "
                     "[1, election_ticks)"};
    }
    if (peers.empty()) {
        if (join) {
            return Error{config::Errc::invalid_value,
                         "cluster.join needs cluster.peers: this node and members to reach"};
        }
        return {};
    }
    QUEEN_TRY(auto parsed, peer_addresses());
    std::vector<std::uint64_t> ids;
    for (const PeerAddress& peer : parsed) {
        ids.push_back(peer.id);
    }
    std::sort(ids.begin(), ids.end());
    if (std::adjacent_find(ids.begin(), ids.end()) != ids.end()) {
        return Error{config::Errc::invalid_value, "cluster.peers: a node id appears twice"};
    }
    if (!std::binary_search(ids.begin(), ids.end(), self)) {
        return Error{
            config::Errc::invalid_value,
            "cluster.peers must include this node (node.id = " + std::to_string(self) + ")"};
    }
    if (secret.size() < 16) {
        return Error{config::Errc::invalid_value,
                     "cluster.secret must be at least 16 characters when cluster.peers is set"};
    }
    if (name.empty() || name.size() > 255) {
        return Error{config::Errc::invalid_value, "cluster.name must be 1-255 characters"};
    }
    return {};
}

Status NodeConfig::validate() const {
    QUEEN_TRY(node.validate());
    QUEEN_TRY(cluster.validate(node.id));
    QUEEN_TRY(prefixed(http.validate(), "http"));
    QUEEN_TRY(prefixed(api.validate(), "api"));
    QUEEN_TRY(prefixed(auth.validate(), "auth"));
    QUEEN_TRY(prefixed(log.validate(), "log"));
    QUEEN_TRY(prefixed(store.validate(), "store"));
    QUEEN_TRY(tenant.validate());
    if (!encryption_key_hex.empty()) {
        const bool is_hex = encryption_key_hex.size() == 64 &&
                            std::all_of(encryption_key_hex.begin(), encryption_key_hex.end(),
                                        [](char c) { return hex_value(c) >= 0; });
        if (!is_hex) {
            return Error{config::Errc::invalid_value,
                         "security.encryption_key must be 64 hex digits (a 32-byte AES-256 key)"};
        }
    }
    if (!is_payload_encryption_enabled &&
        (!encryption_key_hex.empty() || !encryption_key_file.empty())) {
        return Error{config::Errc::invalid_value,
                     "security.encryption_key and security.encryption_key_file must be empty when "
                     "security.payload_encryption = false"};
    }
    return {};
}

void bind_config(config::Schema& schema, NodeConfig& c) {
    schema.add_section("node", "This node's identity and where it keeps its data.");
    schema.add_integer("node.id", &c.node.id, "Node id, unique in the cluster (> 0).", 1);
    schema.add_path("node.data_dir", &c.node.data_dir,
                    "Data directory: node.toml and tenants/<tenant>/{log,state}.");
    schema.add_integer("node.disk_reserve_bytes", &c.node.disk_reserve_bytes,
                       "Free space kept on the data directory's file system: below it pushes "
                       "and other writes that add data get 507 (pops, acks, deletes go on), "
                       "below a quarter of it every write does; both resume when space "
                       "returns (0 = no check).");

    schema.add_section("cluster",
                       "The cluster: with no peers this node is a one-node cluster "
                       "(docs/cluster.md).");
    auto& cl = c.cluster;
    schema.add_string_list("cluster.peers", &cl.peers,
                           "Every founding member as \"<id>@<ip>:<port>\" (its peer listener), "
                           "this node included, the same list on every node. Empty: alone. "
                           "With cluster.join: this node and running members to reach.");
    schema.add_bool("cluster.join", &cl.join,
                    "This node joins a running cluster that `queen admin cluster add` told "
                    "about it: it founds no raft group, takes the cluster's key from a peer and "
                    "waits for each group's leader to add it (docs/cluster.md, \"Adding and "
                    "removing nodes\").");
    schema.add_secret("cluster.secret", &cl.secret,
                      "Shared by every node (>= 16 characters); peers that cannot prove it "
                      "are refused.");
    schema.add_string("cluster.name", &cl.name,
                      "The cluster's name; nodes of another cluster are refused.");
    schema.add_integer("cluster.tick_ms", &cl.tick_ms, "Raft's tick interval.", 1, 60'000);
    schema.add_integer("cluster.election_ticks", &cl.election_ticks,
                       "Ticks without a leader before a follower starts an election "
                       "(randomized up to twice this).",
                       2, 100'000);
    schema.add_integer("cluster.heartbeat_ticks", &cl.heartbeat_ticks,
                       "Ticks between a leader's heartbeats (< election_ticks).", 1, 100'000);
    schema.add_integer("cluster.quiesce_ticks", &cl.quiesce_ticks,
                       "Ticks a tenant's group stays idle before its leader quiesces it (no "
                       "raft heartbeats until work or a peer's failure wakes it); 0 = never.",
                       0, 1'000'000);
    schema.add_integer("cluster.raft_memory_bytes_max", &cl.raft_memory_bytes_max,
                       "Applied entries (payload bytes) each tenant keeps in memory for lagging "
                       "peers; a peer further behind gets them from the leader's log on disk, "
                       "and a snapshot of the leader's state past that.",
                       1);
    schema.add_integer("cluster.leader_wait_ms", &cl.leader_wait_ms,
                       "A write that finds no leader (an election) waits this long for one, "
                       "then fails (503 with Retry-After).",
                       0, 3'600'000);
    schema.add_integer("cluster.forward_timeout_ms", &cl.forward_timeout_ms,
                       "A command a follower forwarded to the leader fails (503) after this "
                       "without an answer.",
                       1, 3'600'000);

    schema.add_section("http", "The HTTP API listener (Queen v1 API, health, metrics).");
    auto& h = c.http;
    schema.add_string("http.address", &h.bind_address,
                      "Numeric IP to listen on. 127.0.0.1 (the default) serves this machine "
                      "only; 0.0.0.0 (or ::) accepts remote clients.");
    schema.add_integer("http.port", &h.port, "TCP port (0 = pick a free one).", 0, 65535);
    schema.add_integer("http.io_threads", &h.io_threads, "Threads running the HTTP event loops.", 1,
                       256);
    schema.add_integer("http.header_size_bytes_max", &h.header_size_bytes_max,
                       "Request line + headers; larger requests get 431.");
    schema.add_integer("http.headers_count_max", &h.headers_count_max,
                       "Headers per request; more get 431.");
    schema.add_integer("http.body_size_bytes_max", &h.body_size_bytes_max,
                       "Request body after de-chunking; larger bodies get 413.");
    schema.add_integer("http.connections_max", &h.connections_max,
                       "Open client connections; beyond it new ones get 503 and are closed.");
    schema.add_integer("http.keep_alive_idle_timeout_ms", &h.keep_alive_idle_timeout_ms,
                       "An idle keep-alive connection is closed after this.");
    schema.add_integer("http.header_read_timeout_ms", &h.header_read_timeout_ms,
                       "Time to receive a request's headers (408 and close after).");
    schema.add_integer("http.body_read_timeout_ms", &h.body_read_timeout_ms,
                       "Longest pause while receiving a body (408 and close after).");
    schema.add_integer("http.request_read_timeout_ms", &h.request_read_timeout_ms,
                       "Time from a request's first byte to its body's last (408 and close "
                       "after), however steadily it trickles in.");
    schema.add_integer("http.close_linger_timeout_ms", &h.close_linger_timeout_ms,
                       "Unread input is drained this long before closing a connection.");
    schema.add_integer("http.pipelined_requests_max", &h.pipelined_requests_max,
                       "Requests of one connection in flight; reading pauses beyond it.");
    schema.add_integer("http.read_buffer_bytes", &h.read_buffer_bytes,
                       "Bytes read per socket read.");
    schema.add_integer("http.listen_backlog", &h.listen_backlog, "listen() backlog.");
    schema.add_path("http.tls_certificate_file", &h.tls.certificate_file,
                    "PEM certificate chain (the server's certificate first, then intermediates). "
                    "Set with http.tls_key_file, the port speaks HTTPS only. Empty: plain HTTP. "
                    "SIGHUP reads both files again.");
    schema.add_path("http.tls_key_file", &h.tls.key_file,
                    "PEM private key of http.tls_certificate_file (unencrypted; mode 0600).");
    schema.add_path("http.tls_client_ca_file", &h.tls.client_ca_file,
                    "PEM CAs: clients must present a certificate signed by one (mutual TLS). "
                    "Empty: no client certificate is asked for.");
    schema.add_string("http.tls_min_version", &h.tls.min_version,
                      "Oldest TLS version accepted: \"1.2\" or \"1.3\".");
    schema.add_string_list(
        "http.cors_allowed_origins", &h.cors.allowed_origins,
        "Web origins whose pages may call the API from a browser, exactly as the browser sends "
        "them (e.g. [\"http://localhost:3000\"]); \"*\" allows any. Empty: none.");
    schema.add_removed("http.cors_enabled",
                       "cross-origin access is granted per origin with http.cors_allowed_origins "
                       "(empty by default)");
    schema.add_removed("http.cors_allow_origin",
                       "list the allowed origins in http.cors_allowed_origins (e.g. "
                       "[\"http://localhost:3000\"], or [\"*\"] for any origin)");
    schema.add_string("http.cors_allow_methods", &h.cors.allow_methods,
                      "Access-Control-Allow-Methods sent to allowed origins.");
    schema.add_string("http.cors_allow_headers", &h.cors.allow_headers,
                      "Access-Control-Allow-Headers sent to allowed origins.");
    schema.add_integer("http.cors_max_age_seconds", &h.cors.max_age_seconds,
                       "Access-Control-Max-Age on preflight answers to allowed origins.");

    schema.add_section("api",
                       "What one request of the Queen v1 API may carry. Bytes: "
                       "http.body_size_bytes_max.");
    schema.add_integer("api.push_items_max", &c.api.push_items_max,
                       "Items of one push; more get 400, and no item past the limit is built.", 1,
                       1'000'000);
    schema.add_integer("api.ack_items_max", &c.api.ack_items_max,
                       "Acknowledgments of one batch ack; more get 400.", 1, 1'000'000);
    schema.add_integer("api.transaction_operations_max", &c.api.transaction_operations_max,
                       "Push items plus acks of one transaction; more get 400.", 1, 1'000'000);

    schema.add_section("log", "Each tenant's commit log (segment files with group commit).");
    schema.add_integer("log.segment_size_bytes_max", &c.log.segment_size_bytes_max,
                       "A segment file is rolled before it grows past this.");
    schema.add_integer("log.preallocate_bytes_ahead", &c.log.preallocate_bytes_ahead,
                       "Zeros kept written ahead of the last record, so that fdatasync has no file "
                       "size change to journal (0: off).");
    schema.add_bool("log.direct_io", &c.log.direct_io,
                    "Write the log with O_DIRECT (no copy into the page cache); buffered where the "
                    "file system refuses it.");
    schema.add_integer("log.record_size_bytes_max", &c.log.record_size_bytes_max,
                       "Largest log entry (one command, e.g. a push batch).");
    schema.add_integer("log.pending_bytes_max", &c.log.pending_bytes_max,
                       "Bytes waiting for the log writer before appenders block.");
    schema.add_integer("log.index_interval_bytes", &c.log.index_interval_bytes,
                       "One in-memory index point per this many bytes of log.");
    schema.add_integer("log.read_records_max", &c.log.read_records_max,
                       "Records one log read returns at most.");

    schema.add_section("store", "Each tenant's LMDB state.");
    schema.add_integer("store.map_size_bytes", &c.store.map_size_bytes,
                       "Initial LMDB map size (address space; the file grows with the data). "
                       "Each doubling pauses the tenant while its memory index is rebuilt.");
    schema.add_integer("store.map_size_bytes_max", &c.store.map_size_bytes_max,
                       "The map doubles when full, up to this.");
    schema.add_integer("store.tables_max", &c.store.tables_max, "Named LMDB tables at most.");
    schema.add_integer("store.readers_max", &c.store.readers_max,
                       "Concurrent LMDB read transactions.");
    schema.add_enum("store.sync_mode", &c.store.sync_mode,
                    {{"durable", store::SyncMode::durable},
                     {"no_meta_sync", store::SyncMode::no_meta_sync},
                     {"no_sync", store::SyncMode::no_sync},
                     {"checkpoint", store::SyncMode::checkpoint}},
                    "How LMDB commits reach the disk; the log is the durability point either way.");

    schema.add_section("tenant", "How a tenant batches, applies and maintains its state.");
    auto& t = c.tenant;
    schema.add_integer(
        "tenant.proposals_max", &t.proposals_max,
        "Commands in flight (appended, not yet applied); beyond it requests get 503.", 1);
    schema.add_integer("tenant.reads_waiting_max", &t.reads_waiting_max,
                       "Reads waiting for the LMDB commit of what was answered (none holds a "
                       "thread); beyond it reads get 503.",
                       1);
    schema.add_integer("tenant.batch_entries_max", &t.batch_entries_max,
                       "Committed commands taken into one apply at most.", 1);
    schema.add_integer("tenant.batch_bytes_max", &t.batch_bytes_max,
                       "Entry bytes taken into one apply at most.", 1);
    schema.add_integer(
        "tenant.sweep_interval_ms", &t.sweep_interval_ms,
        "Period of the retention / ttl / eviction sweep (proposed only while a queue has "
        "one of those options).",
        1);
    schema.add_integer("tenant.state_commit_interval_us", &t.state_commit_interval_us,
                       "How long applied entries may wait in an open LMDB write txn for more to "
                       "share its commit (answers do not wait; 0 = commit every apply batch).");
    schema.add_integer("tenant.state_commit_bytes", &t.state_commit_bytes,
                       "Entry bytes an open LMDB write txn gathers before it commits, whatever "
                       "the interval.",
                       1);
    schema.add_integer("tenant.state_sync_interval_ms", &t.state_sync_interval_ms,
                       "Period of the LMDB flush that lets the log be compacted.", 1);
    schema.add_integer("tenant.state_writeback_interval_ms", &t.state_writeback_interval_ms,
                       "Between LMDB checkpoints, how often writeback of dirty pages is started "
                       "(spreads the disk writes; 0 = never).");
    schema.add_integer("tenant.log_retain_entries", &t.log_retain_entries,
                       "Log entries kept below the last durably applied one (a lagging "
                       "peer catches up from them without a snapshot).");

    schema.add_section("auth",
                       "Who may do what (docs/security.md, \"Authentication\"): bearer tokens, "
                       "static or JWT, each granting read, write or admin on some tenants.");
    schema.add_bool("auth.enabled", &c.auth.is_enabled,
                    "true: every route but /health, /ready and /metrics needs a token. Off, a "
                    "node listening beyond loopback warns at start.");
    schema.add_path("auth.tokens_file", &c.auth.tokens_file,
                    "Static API tokens, lines \"<name> <role> <tenants> <token>\" (tenants "
                    "comma-separated or *), mode 0600 (\"\" = none).");
    schema.add_secret("auth.jwt_hs256_secret", &c.auth.jwt_hs256_secret,
                      "HS256 JWT secret, at least 32 bytes (\"\" = HS256 tokens refused).");
    schema.add_path("auth.jwt_public_key_file", &c.auth.jwt_public_key_file,
                    "RS256 JWT key: an RSA public key in PEM, 2048 bits or more (\"\" = none).");
    schema.add_path("auth.jwks_file", &c.auth.jwks_file,
                    "RS256 JWT keys: a JWKS file, keys picked by kid (\"\" = none).");
    schema.add_string("auth.jwt_issuer", &c.auth.jwt_issuer,
                      "Non-empty: a JWT's iss must equal it.");
    schema.add_string("auth.jwt_audience", &c.auth.jwt_audience,
                      "Non-empty: a JWT's aud (string or array) must hold it.");
    schema.add_integer("auth.jwt_clock_skew_seconds", &c.auth.jwt_clock_skew_seconds,
                       "Leeway for a JWT's exp and nbf.", 0, 3600);

    schema.add_section("security",
                       "Payload encryption for queues with encryptionEnabled (docs/security.md). "
                       "Key precedence: QUEEN_ENCRYPTION_KEY, encryption_key, encryption_key_file, "
                       "then keys/payload.key in node.data_dir, created at first start.");
    schema.add_secret("security.encryption_key", &c.encryption_key_hex,
                      "AES-256 key as 64 hex digits (\"\" = not given).");
    schema.add_path("security.encryption_key_file", &c.encryption_key_file,
                    "File holding the key as 64 hex digits, mode 0600; must exist (\"\" = not "
                    "given). Give every node of a cluster the same one.");
    schema.add_bool("security.payload_encryption", &c.is_payload_encryption_enabled,
                    "false: no key is loaded or created; pushes to queues with encryptionEnabled "
                    "and reads of encrypted messages answer 500.");

    schema.add_section("logging", "Diagnostics on stderr.");
    schema.add_enum("logging.level", &c.logging.level,
                    {{"trace", Level::trace},
                     {"debug", Level::debug},
                     {"info", Level::info},
                     {"warn", Level::warn},
                     {"error", Level::error},
                     {"off", Level::off}},
                    "Lowest level written.");
}

}  // namespace queen::node
