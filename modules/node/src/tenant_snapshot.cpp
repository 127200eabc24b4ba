// modules/node/src/tenant_snapshot.cpp — a tenant follower taking a snapshot: the installer
// thread pulls the leader's state (snapshot.hpp) and the applier swaps it in.
#include "tenant.hpp"

#include <algorithm>

#include "data_dir.hpp"
#include "entry.hpp"
#include "queen/core/thread_name.hpp"
#include "queen/raft/codec.hpp"
#include "queen/raft/errc.hpp"

namespace queen::node::detail {

void Tenant::on_install_snapshot(const raft::SnapshotMeta& meta) {
    QUEEN_LOG(logger_, Level::info, "tenant.snapshot_needed",
              "tenant=" << name_ << " index=" << meta.index << " term=" << meta.term
                        << " applied=" << applied_index_.load());
    {
        std::lock_guard lock(mutex_);
        snapshot_job_ = meta;
        if (!installer_.joinable()) {
            installer_ = std::thread([this] { run_installer(); });
        }
    }
    installer_wakeup_.notify_all();
}

void Tenant::run_installer() {
    set_thread_name("snapshot");
    std::unique_lock lock(mutex_);
    while (true) {
        installer_wakeup_.wait(lock, [&] { return stopping_ || snapshot_job_.has_value(); });
        if (!snapshot_job_) {
            return;  // stopping
        }
        const raft::SnapshotMeta meta = *snapshot_job_;
        snapshot_job_.reset();
        lock.unlock();
        const Status installed = install_snapshot(meta);
        if (!installed && !installed.error().is(Errc::cancelled)) {
            QUEEN_LOG(logger_, Level::error, "tenant.snapshot_install_failed",
                      "tenant=" << name_ << " error=\"" << installed.error().message() << "\"");
        }
        // Not under the tenant's lock: the replicator hands the next Readies over from here.
        replicator_->snapshot_installed(installed);
        lock.lock();
    }
}

Status Tenant::install_snapshot(const raft::SnapshotMeta& meta) {
    is_catching_up_.store(true, std::memory_order_release);
    struct Done {
        std::atomic<bool>& flag;
        ~Done() { flag.store(false, std::memory_order_release); }
    } done{is_catching_up_};
    const std::int64_t started_ns = clock_.monotonic_ns();
    std::uint64_t bytes = 0;
    const auto incoming = dir_ / snapshot_incoming_dir;
    if (applied_index_.load(std::memory_order_acquire) < meta.index.value()) {
        QUEEN_TRY(bytes, snapshot_receiver_->fetch(incoming / "state", meta.index,
                                                   [this] { return replicator_->leader(); }));
    } else {
        // The state holds the snapshot already (an earlier install brought a newer one): only
        // the log starts over.
        std::error_code ec;
        std::filesystem::remove_all(incoming, ec);
        QUEEN_TRY(create_directories_durably(incoming));
    }
    QUEEN_TRY(commit_download(dir_, InstallMeta{meta.index, meta.term}));
    {
        std::unique_lock lock(mutex_);
        if (stopping_) {
            return Error{Errc::cancelled, "tenant " + name_ + " is stopping"};  // a restart
        }                                                                       // finishes it
        is_installing_.store(true, std::memory_order_release);
        install_result_.reset();
        install_job_ = InstallMeta{meta.index, meta.term};
        is_applier_waiting_ = false;
        committed_ready_.notify_all();
        install_done_.wait(lock, [&] { return install_result_.has_value(); });
    }
    QUEEN_TRY(*install_result_);
    snapshots_installed_total_.fetch_add(1, std::memory_order_relaxed);
    snapshot_bytes_received_total_.fetch_add(bytes, std::memory_order_relaxed);
    QUEEN_LOG(logger_, Level::info, "tenant.snapshot_installed",
              "tenant=" << name_ << " index=" << meta.index << " applied=" << applied_index_.load()
                        << " bytes=" << bytes
                        << " ms=" << (clock_.monotonic_ns() - started_ns) / 1'000'000);
    return {};
}

Status Tenant::swap_in_snapshot(const InstallMeta& meta) {
    commit_state();  // the old state's open txn (its entries are in the snapshot anyway)
    const bool has_state = std::filesystem::exists(dir_ / snapshot_install_dir / "state");
    Status swapped;
    {
        std::unique_lock engine_lock(engine_mutex_);
        if (has_state) {
            engine_.reset();  // closes LMDB
            swapped = move_installed_state(dir_);
            if (swapped) {
                auto opened = engine::Engine::open(dir_ / "state", engine_options_);
                if (opened) {
                    engine_ = std::make_unique<engine::Engine>(std::move(*opened));
                } else {
                    swapped = opened.error();
                }
            }
        }
        if (swapped && engine_ && engine_->applied_index() < meta.index) {
            swapped = Error{Errc::corruption, "the leader's state ends at " +
                                                  std::to_string(engine_->applied_index().value()) +
                                                  ", before the snapshot's index " +
                                                  std::to_string(meta.index.value())};
        }
        if (swapped) {
            swapped = log_->reset(meta.index, meta.term);
        }
    }
    if (swapped) {
        swapped = finish_install(dir_);
    }
    if (swapped) {
        swapped = refresh_due();
    }
    if (!swapped) {
        const Error failure = prefixed(swapped.error(), name_);
        poison(failure);
        is_installing_.store(false, std::memory_order_release);
        return failure;
    }
    if (auto loaded = load_system_records(group_); !loaded) {
        const Error failure = prefixed(loaded.error(), name_);
        poison(failure);
        is_installing_.store(false, std::memory_order_release);
        return failure;
    }
    publish_catalogue();
    const LogIndex applied = engine_->applied_index();
    applied_index_.store(applied.value(), std::memory_order_release);
    durable_index_.store(applied.value(), std::memory_order_relaxed);
    {
        std::lock_guard lock(mutex_);
        answered_through_ = std::max(answered_through_, applied);
        visible_through_ = std::max(visible_through_, applied);
    }
    is_installing_.store(false, std::memory_order_release);
    publish_visible();
    waiters_.wake_tenant(name_);  // waiting pops look at the new state
    return {};
}

}  // namespace queen::node::detail
