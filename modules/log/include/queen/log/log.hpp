// queen/log/log.hpp — the raft log's storage: segmented append-only files with group commit,
// crash recovery, suffix truncation and prefix compaction. Not a raft implementation: it stores
// (term, index, type, payload) records and says when they are durable.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "queen/core/bytes.hpp"
#include "queen/core/clock.hpp"
#include "queen/core/ids.hpp"
#include "queen/core/logger.hpp"
#include "queen/core/result.hpp"
#include "queen/log/file.hpp"
#include "queen/log/format.hpp"
#include "queen/log/options.hpp"

namespace queen::log {

/// A record as read back from the log (owns its payload).
struct Record {
    Term term;
    LogIndex index;
    RecordType type = 0;
    Bytes payload;
};

/// Identifies one append call. Appends are numbered in the order the log accepted them;
/// `sequence` never repeats, even when truncate_suffix() later reuses indexes.
struct AppendTicket {
    std::uint64_t sequence = 0;
    LogIndex first_index;  ///< index of the first record of the call
    LogIndex last_index;   ///< index of the last record of the call
};

/// Called once per append when its records are durable (Status ok) or can never be reported
/// durable (Errc::poisoned; a closing log drains its pending appends first). Runs on the log's
/// writer thread, in append order, outside the log's lock: keep it short; it may call append()
/// or any reader, but must not call wait_durable(), flush(), truncate_suffix(), drop_prefix()
/// or close() (they wait for the writer thread itself).
using DurableCallback = std::function<void(const Status&)>;

/// fdatasync measurements, for metrics and `queen bench log`. Latencies are nanoseconds as read
/// from the injected Clock around each fdatasync of the writer (group syncs and roll syncs).
struct SyncStats {
    /// Histogram bucket b covers latencies whose top three significant bits select it: 4 buckets
    /// per power of two, so a percentile is exact to within 25 %.
    static constexpr std::size_t bucket_count = 256;
    std::uint64_t sync_count = 0;      ///< fdatasync calls on segment files
    std::uint64_t group_count = 0;     ///< groups written (one group = one or more append calls)
    std::uint64_t records_synced = 0;  ///< records made durable
    std::uint64_t bytes_synced = 0;    ///< encoded bytes made durable
    std::uint64_t latency_ns_last = 0;
    std::uint64_t latency_ns_max = 0;
    std::uint64_t latency_ns_total = 0;
    std::array<std::uint64_t, bucket_count> latency_buckets{};

    /// The bucket a latency falls into, and the largest latency a bucket holds.
    [[nodiscard]] static std::size_t bucket_of(std::uint64_t latency_ns) noexcept;
    [[nodiscard]] static std::uint64_t bucket_upper_ns(std::size_t bucket) noexcept;
    /// Upper bound of the bucket holding quantile `q` in [0, 1] (0 when nothing was measured).
    [[nodiscard]] std::uint64_t latency_ns_quantile(double q) const noexcept;
};

/// What open() found and changed.
struct RecoveryReport {
    std::uint64_t segments_scanned = 0;
    std::uint64_t records_recovered = 0;
    LogIndex first_index;  ///< after recovery
    LogIndex last_index;   ///< after recovery (first_index - 1 when empty)
    bool tail_truncated = false;
    std::filesystem::path truncated_segment;  ///< file whose tail was cut
    std::uint64_t truncated_at_offset = 0;    ///< its new size
    std::uint64_t bytes_cut = 0;              ///< bytes removed from it
    StopReason truncation_reason = StopReason::end_of_data;
    std::string truncation_detail;
    /// The cut segment held a record with a valid CRC after the damage. In the last segment this
    /// is normal for a group that was not synced (its pages may reach disk in any order).
    bool valid_record_after_cut = false;
    std::vector<std::filesystem::path> removed_segments;  ///< later, empty or torn segments dropped
    bool created = false;  ///< the directory held no segment: a new log was started
    /// Set when open() refused damage to synced data at a record: its index, the first one a
    /// repair drops (cut_log(dir, *damaged_from, ...) is what repair_command() runs).
    std::optional<LogIndex> damaged_from;
};

/// Where the log does its I/O and reports. All references must outlive the Log.
struct Environment {
    FileSystem* file_system = &posix_file_system();
    const Clock* clock = &SystemClock::instance();
    Logger* logger = &NullLogger::instance();
};

/// The raft log storage of one tenant, in one directory of segment files.
///
/// Durability: append() hands records to a writer thread; the writer takes everything pending
/// as one group, writes it (pwrite, short writes retried) and calls fdatasync once per group.
/// An append is durable only when wait_durable() returns ok or its callback ran with ok.
///
/// Failure: any write, fdatasync, truncate or directory error (ENOSPC included) poisons the log.
/// From then on every call returns Errc::poisoned whose context holds the original error; no
/// append that was not durable is ever reported durable. Reopen to recover.
///
/// Thread-safety: every member function may be called from any thread. Appends are ordered by
/// the log's internal lock; explicit-index appends from several threads must coordinate their
/// indexes themselves (append_next() does that for you).
class Log {
public:
    /// Opens the log in `dir` (created if missing), recovering from a crash: scans every segment,
    /// stops at the first record whose length or CRC is wrong, truncates that torn tail and drops
    /// later segments that hold no valid record. `report` (optional) says what was cut.
    /// Recovery decides before it changes a file: it reads every segment and plans the cut
    /// first. `keep_through` is the highest index the caller knows was acknowledged (applied to
    /// its state, or counted toward a raft commit): a cut that would drop it is damage to synced
    /// data (a bit flipped after a clean fdatasync looks like a torn write), and open fails
    /// without changing any file. Segments are read a 1 MiB window at a time (a longer record
    /// whole): open never holds a whole segment in memory.
    ///
    /// Torn write or damage: only the last group of the last segment can be torn (its fdatasync
    /// never returned, so nothing in it was acknowledged), and a torn write leaves whole sectors
    /// of a record as they were before (zeros): the record differs from what was written in
    /// whole sectors. A bad record that reached the disk whole (a valid CRC with a wrong field,
    /// or exactly one bit away from a valid record with the expected index: see
    /// find_written_damage_windowed() in format.hpp) is damage to synced data wherever it is,
    /// the newest record included, and so is a bad record with valid records after it in a
    /// segment that is not the last. Open then fails with Errc::corruption naming the segment
    /// file, the byte offset and the index of the record, and the command that cuts it
    /// (repair_command(); the operator decides, see cut_log()); no file is changed. Damage that
    /// leaves neither trace (a lost write, several bits or a sector gone in the newest records)
    /// looks like a torn write byte for byte; `keep_through` is what refuses it.
    /// Errors: Errc::invalid_argument (options), Errc::corruption (damage to synced data as
    /// above, a bad segment header that is not a torn last segment, a gap between segments, a
    /// file name that does not match its header, a cut below `keep_through`), Errc::io,
    /// Errc::disk_full.
    [[nodiscard]] static Result<std::unique_ptr<Log>> open(const std::filesystem::path& dir,
                                                           const Options& options,
                                                           Environment environment = {},
                                                           RecoveryReport* report = nullptr,
                                                           LogIndex keep_through = LogIndex{0});

    /// Drains pending appends (writes and syncs them) and stops the writer thread.
    ~Log();
    Log(const Log&) = delete;
    Log& operator=(const Log&) = delete;

    /// Queues records for the writer. Indexes must continue the log (records[0].index ==
    /// last_index() + 1, then consecutive) and terms must not decrease. Blocks while
    /// Options::pending_bytes_max bytes are already waiting (backpressure). `on_durable` (may be
    /// empty) runs on the writer thread once the records are durable or the log is poisoned.
    /// The payload bytes are copied before return.
    /// Errors: Errc::invalid_argument (empty batch, index gap, decreasing term, payload over
    /// Options::record_size_bytes_max, batch over pending_bytes_max), Errc::poisoned,
    /// Errc::cancelled (the log is closing).
    [[nodiscard]] Result<AppendTicket> append(std::span<const RecordView> records,
                                              DurableCallback on_durable = {});

    /// append() that never blocks: when Options::pending_bytes_max bytes are already waiting it
    /// fails with Errc::busy instead (for callers that must not block, e.g. I/O threads).
    /// Errors: as append(), plus Errc::busy.
    [[nodiscard]] Result<AppendTicket> try_append(std::span<const RecordView> records,
                                                  DurableCallback on_durable = {});

    /// Appends one record at index last_index() + 1, chosen under the log's lock, so many threads
    /// can append concurrently. Errors as append(); a `term` below last_term() is invalid.
    [[nodiscard]] Result<AppendTicket> append_next(Term term, RecordType type, ByteSpan payload,
                                                   DurableCallback on_durable = {});

    /// Blocks until the ticket's records are durable. Errors: Errc::poisoned when the log failed
    /// before they were synced (they may or may not be on disk; they were never acknowledged).
    [[nodiscard]] Status wait_durable(const AppendTicket& ticket);

    /// append() then wait_durable(): returns once the records are durable.
    [[nodiscard]] Result<AppendTicket> append_durable(std::span<const RecordView> records);

    /// Blocks until everything appended so far is durable. Errors: Errc::poisoned.
    [[nodiscard]] Status flush();

    /// Reads records with indexes in [first, end), in order, stopping early once `bytes_max`
    /// payload bytes or Options::read_records_max records were collected (at least one record is
    /// returned when the range is not empty). Records not yet written by the writer are waited
    /// for; records need not be durable yet. Every record's CRC is checked.
    /// Errors: Errc::out_of_range (first < first_index() or end > last_index() + 1 or
    /// first > end), Errc::corruption (a CRC or sequence check failed), Errc::io, Errc::poisoned.
    [[nodiscard]] Result<std::vector<Record>> read(LogIndex first, LogIndex end,
                                                   std::uint64_t bytes_max = UINT64_MAX);

    /// Term of the record at `index`; for index == first_index() - 1, the term kept from before
    /// the prefix was dropped (0 at the start of a log).
    /// Errors: Errc::out_of_range (index outside [first_index() - 1, last_index()]).
    [[nodiscard]] Result<Term> term_at(LogIndex index) const;

    /// Removes every record after `last_kept` (raft conflict resolution). Waits for pending
    /// appends to be durable first. Later segments are deleted (newest first, directory synced),
    /// then the segment holding last_kept is truncated and synced.
    /// Errors: Errc::out_of_range (last_kept outside [first_index() - 1, last_index()]),
    /// Errc::poisoned, Errc::io / Errc::disk_full (which also poison the log).
    [[nodiscard]] Status truncate_suffix(LogIndex last_kept);

    /// Compaction: deletes whole segments whose records are all below `first_kept` (never the
    /// last segment), oldest first, then syncs the directory. first_index() becomes the first
    /// index of the oldest remaining segment (<= first_kept) and term_at(first_index() - 1)
    /// stays known. Errors: Errc::out_of_range (first_kept > last_index() + 1), Errc::poisoned,
    /// Errc::io (which also poisons the log).
    [[nodiscard]] Status drop_prefix(LogIndex first_kept);

    /// Replaces the whole log by an empty one that continues after `last`, whose term is `term`
    /// (a raft snapshot replaced the state the log led to): every segment is deleted, newest
    /// first, then one empty segment starting at last + 1 is created; files and directory are
    /// synced. first_index() becomes last + 1 and term_at(last) == term. Waits for pending
    /// appends first. A crash in between leaves a prefix of the old log (or an empty log): the
    /// caller keeps its own marker and resets again. Errors: Errc::poisoned, Errc::io /
    /// Errc::disk_full (which also poison the log).
    [[nodiscard]] Status reset(LogIndex last, Term term);

    /// Drains pending appends and stops the writer; later calls fail with Errc::cancelled.
    /// Returns the poison error if the log is poisoned. Idempotent.
    [[nodiscard]] Status close();

    /// First index held (1 for a new log). The log is empty when last_index() < first_index().
    [[nodiscard]] LogIndex first_index() const;
    /// Last index appended (durable or not).
    [[nodiscard]] LogIndex last_index() const;
    /// Term of last_index() (or of first_index() - 1 when empty).
    [[nodiscard]] Term last_term() const;
    /// Highest index known durable (every index at or below it that the log holds is synced).
    [[nodiscard]] LogIndex durable_index() const;
    /// The error that poisoned the log, if any (its original code: Errc::io, disk_full, ...).
    [[nodiscard]] std::optional<Error> poison_reason() const;
    /// A copy of the fdatasync statistics.
    [[nodiscard]] SyncStats sync_stats() const;
    /// Number of segment files.
    [[nodiscard]] std::size_t segment_count() const;
    [[nodiscard]] const std::filesystem::path& directory() const noexcept;

private:
    struct Impl;
    explicit Log(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

/// The command an operator runs to cut the log in `dir` from `first_dropped` on (the text the
/// refusal of damage to synced data quotes): "queen repair log DIR --cut-from N --confirm".
[[nodiscard]] std::string repair_command(const std::filesystem::path& dir, LogIndex first_dropped);

/// What cut_log() found (and, when it applied the cut, did).
struct CutReport {
    LogIndex first_dropped;  ///< the first index the cut drops
    /// The highest index the files hold from first_dropped on, decoding past damage (a damaged
    /// record counts as the index it stands at); first_dropped - 1 when they hold none.
    LogIndex last_dropped;
    std::uint64_t records_dropped = 0;  ///< last_dropped - first_dropped + 1, or 0
    std::filesystem::path segment;      ///< the file that is cut (or removed, see below)
    bool segment_removed = false;       ///< the cut starts at its first index: removed whole
    std::uint64_t cut_at_offset = 0;    ///< its new size (when not removed)
    std::uint64_t bytes_cut = 0;        ///< bytes removed from it (all of them when removed)
    std::vector<std::filesystem::path> removed_segments;  ///< later segments, removed whole
    bool applied = false;                                 ///< the files were changed
};

/// The operator's repair of damage to synced data (docs/log-format.md): drops the record at
/// `first_dropped` and every later one, from a log that is not open. Records below it must
/// decode: the segment holding first_dropped - 1 is read up to it and cut right after it (a
/// segment that starts at first_dropped, other than the first, is removed whole), and every
/// later segment is removed, newest first; then the cut segment and the directory are synced.
/// With `apply` false nothing is changed and the report says what would be. Dropped records
/// are gone from this copy of the log: acknowledged ones too (a cluster member gets them back
/// from the leader; a single node whose state applied them refuses to start after the cut).
/// Errors: Errc::not_found (no segment in `dir`), Errc::invalid_argument (first_dropped below
/// the first segment's first index, or above the last index + 1 the files hold), Errc::corruption
/// (a record below first_dropped does not decode, or the cut segment's header is damaged: the
/// message says from which index a cut is possible), Errc::io, Errc::disk_full.
[[nodiscard]] Result<CutReport> cut_log(const std::filesystem::path& dir, LogIndex first_dropped,
                                        const Options& options, bool apply,
                                        FileSystem& file_system = posix_file_system());

}  // namespace queen::log
