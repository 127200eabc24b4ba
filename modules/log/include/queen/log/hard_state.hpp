// queen/log/hard_state.hpp — the raft hard state of one tenant (term, vote, commit) in its own
// small file next to the log segments, saved durably and never torn.
//
// Why a file of its own: the log's records are numbered by index, contiguously, and a raft
// conflict truncates them; the hard state has no index and must survive any truncation. Raft's
// ordering rule (docs/raft.md section 2) is the caller's: save() a hard state only after the log
// entries written before it are durable (wait for the log first), so the file is never ahead of
// the entries it covers.
//
// Layout (docs/log-format.md, "Hard state file"): two slots of 512 bytes; a save writes the slot
// the previous save did not (pwrite + fdatasync), so a save torn at any byte leaves the other
// slot, the previous durable state, whole. Open reads both and takes the valid slot with the
// higher sequence number.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>

#include "queen/core/ids.hpp"
#include "queen/core/result.hpp"
#include "queen/log/file.hpp"

namespace queen::log {

/// What raft must find again after a restart: the current term, the vote cast in it (0: none)
/// and the commit index (a hint that may lag, never ahead of the durable log).
struct HardState {
    Term term;
    NodeId vote;
    LogIndex commit;
    friend bool operator==(const HardState&, const HardState&) = default;
};

inline constexpr char hard_state_file_name[] = "hard_state";
inline constexpr std::size_t hard_state_slot_bytes = 512;

/// What `dir`/hard_state holds, read-only (for `queen inspect`): nullopt when nothing was ever
/// saved (no file, or only a torn first save). Errors: as HardStateFile::open.
[[nodiscard]] Result<std::optional<HardState>> read_hard_state(
    const std::filesystem::path& dir, FileSystem& file_system = posix_file_system());

/// The hard state file of one directory. Thread-safety: none (one raft driver per tenant).
class HardStateFile {
public:
    /// Opens `dir`/hard_state and reads the newest valid slot. A missing file, or one whose only
    /// written slot was torn by the first save (the other slot never written), is the zero
    /// state: nothing was ever saved durably. The file is created by the first save().
    /// Errors: Errc::corruption (both slots written and neither valid, a slot of another format
    /// version, a file of the wrong size), Errc::io.
    [[nodiscard]] static Result<HardStateFile> open(const std::filesystem::path& dir,
                                                    FileSystem& file_system = posix_file_system());

    /// The state of the last successful save(), or what open() found.
    [[nodiscard]] const HardState& current() const noexcept { return current_; }

    /// Writes `state` to the other slot and fdatasyncs it: durable when this returns ok. The
    /// first save creates the file (and syncs the directory). After an error the file holds the
    /// previous state or `state` (never a mix), and every later save fails with Errc::poisoned:
    /// reopen to go on.
    /// Errors: Errc::io, Errc::disk_full, Errc::poisoned.
    [[nodiscard]] Status save(const HardState& state);

private:
    HardStateFile(std::filesystem::path dir, FileSystem& file_system)
        : dir_(std::move(dir)), file_system_(&file_system) {}

    std::filesystem::path dir_;
    FileSystem* file_system_;
    std::unique_ptr<File> file_;  // null until the first save creates the file
    HardState current_;
    std::uint64_t sequence_ = 0;  // of the slot current_ came from (0: none)
    bool is_poisoned_ = false;
};

}  // namespace queen::log
