// modules/node/src/tenant_metrics.cpp — what a tenant reports: its health (/health, /ready) and
// its metric samples (/metrics/prometheus).
#include "tenant.hpp"

namespace queen::node::detail {

api::TenantHealth Tenant::health() const {
    api::TenantHealth health;
    health.name = name_;
    {
        std::lock_guard lock(mutex_);
        health.is_poisoned = poison_.has_value();
        health.is_writable = !poison_ && !stopping_;
        if (poison_) {
            health.reason = poison_->message();
        } else if (stopping_) {
            health.reason = "shutting down";
        }
    }
    if (replicator_) {
        const raft::NodeStatus raft = replicator_->status();
        health.role = std::string(raft::role_name(raft.role));
        health.term = raft.hard_state.term.value();
        health.leader_id = raft.leader.value();
        health.leader_changes = replicator_->leader_changes();
        if (cluster_ != nullptr) {
            for (const NodeId id : raft.conf_state.voters) {
                health.voters.push_back(id.value());
            }
            for (const NodeId id : raft.conf_state.learners) {
                health.learners.push_back(id.value());
            }
        }
        if (raft.is_recovering) {
            health.catching_up =
                "recovering a damaged log: votes for nobody until the leader re-replicated it";
        }
        // A follower serves by forwarding to the leader it knows; without one, nobody commits.
        if (raft.role != raft::Role::leader && health.is_writable &&
            (raft.leader == raft::no_node || cluster_ == nullptr)) {
            health.is_writable = false;
            health.reason = "no leader (election in progress)";
        }
    }
    if (is_catching_up_.load(std::memory_order_acquire)) {
        health.catching_up = "installing a snapshot of the leader's state";
    }
    health.applied_index = applied_index_.load(std::memory_order_acquire);
    health.committed_index = replicator_ ? replicator_->committed_index().value() : 0;
    std::error_code ec;
    for (const auto& file : std::filesystem::directory_iterator(log_dir_, ec)) {
        std::error_code size_ec;
        const auto size = file.file_size(size_ec);
        health.log_bytes += size_ec ? 0 : size;
    }
    std::shared_lock engine_lock(engine_mutex_, std::try_to_lock);
    if (engine_lock.owns_lock() && engine_) {
        if (auto stats = engine_->env().stats()) {
            health.state_bytes = stats->file_size_bytes;
        }
    }
    return health;
}

void Tenant::collect_metrics(std::vector<api::MetricSample>& samples,
                             std::vector<api::HistogramSample>& histograms) const {
    const std::vector<std::pair<std::string, std::string>> labels{{"tenant", name_}};
    auto add = [&](std::string metric, std::string help, api::MetricSample::Kind kind,
                   double value) {
        samples.push_back(
            api::MetricSample{std::move(metric), std::move(help), kind, labels, value});
    };
    // queen_tenant_{applied,committed}_index, queen_log_bytes, queen_state_bytes and
    // queen_tenant_poisoned come from the tenant's health (api health routes), not from here:
    // one series each.
    add("queen_log_segments", "Log segment files", api::MetricSample::Kind::gauge,
        static_cast<double>(log_->segment_count()));
    add("queen_entries_applied_total", "Log entries applied", api::MetricSample::Kind::counter,
        static_cast<double>(entries_applied_total_.load(std::memory_order_relaxed)));
    add("queen_apply_batches_total", "Batches of log entries the applier applied",
        api::MetricSample::Kind::counter,
        static_cast<double>(apply_batches_total_.load(std::memory_order_relaxed)));
    add("queen_state_commits_total", "LMDB write transactions committed by the applier",
        api::MetricSample::Kind::counter,
        static_cast<double>(state_commits_total_.load(std::memory_order_relaxed)));
    add("queen_state_checkpoints_total",
        "LMDB checkpoints (flush + saved meta page) taken by the maintenance thread",
        api::MetricSample::Kind::counter,
        static_cast<double>(checkpoints_total_.load(std::memory_order_relaxed)));
    add("queen_state_checkpoint_seconds_total", "Seconds spent taking LMDB checkpoints",
        api::MetricSample::Kind::counter,
        static_cast<double>(checkpoint_ns_total_.load(std::memory_order_relaxed)) / 1e9);
    add("queen_state_durable_index",
        "Applied log index the last checkpoint made durable (replay starts above it)",
        api::MetricSample::Kind::gauge,
        static_cast<double>(durable_index_.load(std::memory_order_relaxed)));
    add("queen_forwarded_total", "Commands this node forwarded to the tenant's leader",
        api::MetricSample::Kind::counter,
        static_cast<double>(forwarded_total_.load(std::memory_order_relaxed)));
    add("queen_proposals_rejected_total", "Commands refused because the proposal queue was full",
        api::MetricSample::Kind::counter,
        static_cast<double>(proposals_rejected_total_.load(std::memory_order_relaxed)));
    add("queen_disk_full_refusals_total",
        "Client writes refused with 507 because the data directory's free space was under "
        "node.disk_reserve_bytes",
        api::MetricSample::Kind::counter,
        static_cast<double>(disk_refusals_total_.load(std::memory_order_relaxed)));
    add("queen_disk_free_bytes",
        "Free space on the data directory's file system at the last reading (every 100 ms while "
        "writes come)",
        api::MetricSample::Kind::gauge, static_cast<double>(disk_.free_bytes()));
    {
        std::size_t parked = 0;
        {
            std::lock_guard lock(mutex_);
            add("queen_proposals_waiting", "Commands proposed and not yet applied and answered",
                api::MetricSample::Kind::gauge, static_cast<double>(in_flight_.size()));
            parked = parked_.size();
        }
        // Not under the tenant's lock (lock order: replicator, then tenant).
        const std::size_t reads = replicator_ ? replicator_->reads_waiting_for_leader() : 0;
        add("queen_requests_waiting_for_leader",
            "Requests (writes and reads) that came during an election, waiting for its outcome",
            api::MetricSample::Kind::gauge, static_cast<double>(parked + reads));
    }
    if (snapshot_source_) {
        add("queen_raft_snapshots_sent_total",
            "State snapshots this node sent to followers to the last byte (leader)",
            api::MetricSample::Kind::counter, static_cast<double>(snapshot_source_->sent_total()));
        add("queen_raft_snapshot_bytes_sent_total", "Bytes of state snapshots sent to followers",
            api::MetricSample::Kind::counter,
            static_cast<double>(snapshot_source_->sent_bytes_total()));
        add("queen_raft_snapshots_installed_total",
            "State snapshots this node installed from a leader (follower)",
            api::MetricSample::Kind::counter,
            static_cast<double>(snapshots_installed_total_.load(std::memory_order_relaxed)));
        add("queen_raft_snapshot_bytes_received_total",
            "Bytes of state snapshots received from leaders", api::MetricSample::Kind::counter,
            static_cast<double>(snapshot_bytes_received_total_.load(std::memory_order_relaxed)));
    }
    if (replicator_ && snapshot_source_) {
        add("queen_raft_entries_from_log_total",
            "Entries this node (leading) read back from its log for followers behind raft's memory",
            api::MetricSample::Kind::counter, static_cast<double>(replicator_->entries_from_log()));
        add("queen_raft_entry_bytes_from_log_total",
            "Payload bytes of queen_raft_entries_from_log_total", api::MetricSample::Kind::counter,
            static_cast<double>(replicator_->entry_bytes_from_log()));
    }
    if (replicator_) {
        for (const auto& [peer, lag] : replicator_->follower_lag()) {
            samples.push_back(api::MetricSample{
                "queen_raft_follower_lag_entries",
                "Leader only: log entries a follower lacks (the leader's last index - its match)",
                api::MetricSample::Kind::gauge,
                {{"tenant", name_}, {"peer", std::to_string(peer.value())}},
                static_cast<double>(lag)});
        }
    }
    {
        api::HistogramSample commit;
        commit.name = "queen_raft_commit_latency_seconds";
        commit.help = "From a command's proposal on this node until the applier takes it committed";
        commit.labels = labels;
        std::uint64_t cumulative = 0;
        for (std::size_t b = 0; b < std::size(latency_bounds_s); ++b) {
            cumulative += commit_latency_buckets_[b].load(std::memory_order_relaxed);
            commit.upper_bounds.push_back(latency_bounds_s[b]);
            commit.cumulative_counts.push_back(cumulative);
        }
        commit.count = cumulative + commit_latency_buckets_.back().load(std::memory_order_relaxed);
        commit.sum =
            static_cast<double>(commit_latency_ns_total_.load(std::memory_order_relaxed)) / 1e9;
        histograms.push_back(std::move(commit));
    }
    const log::SyncStats stats = log_->sync_stats();
    add("queen_log_syncs_total", "fdatasync calls of the log", api::MetricSample::Kind::counter,
        static_cast<double>(stats.sync_count));
    add("queen_log_records_synced_total", "Log records made durable",
        api::MetricSample::Kind::counter, static_cast<double>(stats.records_synced));
    add("queen_log_bytes_synced_total", "Log bytes made durable", api::MetricSample::Kind::counter,
        static_cast<double>(stats.bytes_synced));
    api::HistogramSample fsync;
    fsync.name = "queen_log_fsync_latency_seconds";
    fsync.help = "Latency of the log's fdatasync calls";
    fsync.labels = labels;
    // Fold the log's fine buckets into fixed Prometheus bounds.
    std::uint64_t count = 0;
    for (double bound : latency_bounds_s) {
        std::uint64_t cumulative = 0;
        for (std::size_t b = 0; b < log::SyncStats::bucket_count; ++b) {
            if (static_cast<double>(log::SyncStats::bucket_upper_ns(b)) <= bound * 1e9) {
                cumulative += stats.latency_buckets[b];
            }
        }
        fsync.upper_bounds.push_back(bound);
        fsync.cumulative_counts.push_back(cumulative);
    }
    for (auto n : stats.latency_buckets) {
        count += n;
    }
    fsync.count = count;
    fsync.sum = static_cast<double>(stats.latency_ns_total) / 1e9;
    histograms.push_back(std::move(fsync));
}

}  // namespace queen::node::detail
