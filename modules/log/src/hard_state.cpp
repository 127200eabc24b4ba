// modules/log/src/hard_state.cpp — HardStateFile: two alternating CRC-checked slots.
#include "queen/log/hard_state.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <optional>
#include <utility>

#include "log_impl.hpp"
#include "queen/core/bytes.hpp"
#include "queen/core/crc32c.hpp"

namespace queen::log {

namespace {

// A slot: magic (8) | version (1) | reserved, zero (7) | sequence (8) | term (8) | vote (8) |
// commit (8) | crc32c of the 48 bytes before it (4) | zeros up to hard_state_slot_bytes.
constexpr std::array<Byte, 8> slot_magic = {'Q', 'U', 'E', 'E', 'N', 'H', 'S', 'T'};
constexpr std::uint8_t slot_version = 1;
constexpr std::size_t slot_crc_offset = 48;
constexpr std::uint64_t file_bytes = 2 * hard_state_slot_bytes;

using Slot = std::array<Byte, hard_state_slot_bytes>;

Slot encode_slot(std::uint64_t sequence, const HardState& state) {
    Slot slot{};
    std::memcpy(slot.data(), slot_magic.data(), slot_magic.size());
    slot[8] = slot_version;
    store_le<std::uint64_t>(slot.data() + 16, sequence);
    store_le<std::uint64_t>(slot.data() + 24, state.term.value());
    store_le<std::uint64_t>(slot.data() + 32, state.vote.value());
    store_le<std::uint64_t>(slot.data() + 40, state.commit.value());
    store_le<std::uint32_t>(slot.data() + slot_crc_offset,
                            crc32c(ByteSpan(slot.data(), slot_crc_offset)));
    return slot;
}

/// What one slot holds.
struct SlotRead {
    bool is_written = false;  ///< any byte not zero
    bool is_valid = false;    ///< magic, version, reserved bytes and CRC check out
    bool is_other_version = false;
    std::uint64_t sequence = 0;
    HardState state;
};

SlotRead decode_slot(ByteSpan slot) {
    SlotRead read;
    read.is_written = std::any_of(slot.begin(), slot.end(), [](Byte b) { return b != 0; });
    if (!read.is_written || !std::equal(slot_magic.begin(), slot_magic.end(), slot.begin()) ||
        load_le<std::uint32_t>(slot.data() + slot_crc_offset) !=
            crc32c(ByteSpan(slot.data(), slot_crc_offset))) {
        return read;
    }
    if (slot[8] != slot_version) {
        read.is_other_version = true;
        return read;
    }
    read.is_valid = std::all_of(slot.begin() + 9, slot.begin() + 16, [](Byte b) { return b == 0; });
    read.sequence = load_le<std::uint64_t>(slot.data() + 16);
    read.state.term = Term{load_le<std::uint64_t>(slot.data() + 24)};
    read.state.vote = NodeId{load_le<std::uint64_t>(slot.data() + 32)};
    read.state.commit = LogIndex{load_le<std::uint64_t>(slot.data() + 40)};
    return read;
}

}  // namespace

namespace {

/// The newest valid slot of the file's bytes, with its sequence number; nullopt when no save
/// was ever durable. Errors: corruption, as documented on HardStateFile::open.
Result<std::optional<std::pair<HardState, std::uint64_t>>> newest_slot(
    const std::filesystem::path& path, const File& file) {
    QUEEN_TRY(const std::uint64_t size, file.size());
    if (size > file_bytes) {
        return Error{Errc::corruption, path.string() + ": " + std::to_string(size) +
                                           " bytes, a hard state file has " +
                                           std::to_string(file_bytes)};
    }
    std::array<Byte, file_bytes> bytes{};  // a short file (a torn first save) reads as zeros
    QUEEN_TRY(detail::read_fully(file, 0, bytes));
    const SlotRead slots[2] = {
        decode_slot(ByteSpan(bytes.data(), hard_state_slot_bytes)),
        decode_slot(ByteSpan(bytes.data() + hard_state_slot_bytes, hard_state_slot_bytes))};
    if (slots[0].is_other_version || slots[1].is_other_version) {
        return Error{Errc::corruption,
                     path.string() + ": a hard state slot of another format version"};
    }
    const SlotRead* newest = nullptr;
    for (const SlotRead& slot : slots) {
        if (slot.is_valid && (newest == nullptr || slot.sequence > newest->sequence)) {
            newest = &slot;
        }
    }
    if (newest == nullptr && slots[0].is_written && slots[1].is_written) {
        return Error{Errc::corruption,
                     path.string() +
                         ": neither hard state slot is valid (both were written): "
                         "damage, not a torn save"};
    }
    if (newest == nullptr) {
        return std::optional<std::pair<HardState, std::uint64_t>>{};
    }
    return std::optional<std::pair<HardState, std::uint64_t>>{
        std::pair{newest->state, newest->sequence}};
}

}  // namespace

Result<std::optional<HardState>> read_hard_state(const std::filesystem::path& dir,
                                                 FileSystem& file_system) {
    const auto path = dir / hard_state_file_name;
    auto opened = file_system.open(path, OpenMode::read_only);
    if (!opened && opened.error().is(Errc::not_found)) {
        return std::optional<HardState>{};
    }
    QUEEN_TRY(std::unique_ptr<File> file, std::move(opened));
    QUEEN_TRY(auto newest, newest_slot(path, *file));
    if (!newest) {
        return std::optional<HardState>{};
    }
    return std::optional<HardState>{newest->first};
}

Result<HardStateFile> HardStateFile::open(const std::filesystem::path& dir,
                                          FileSystem& file_system) {
    HardStateFile hard_state(dir, file_system);
    const auto path = dir / hard_state_file_name;
    auto opened = file_system.open(path, OpenMode::read_write);
    if (!opened && opened.error().is(Errc::not_found)) {
        return hard_state;  // never saved
    }
    QUEEN_TRY(std::unique_ptr<File> file, std::move(opened));
    QUEEN_TRY(auto newest, newest_slot(path, *file));
    if (newest) {
        hard_state.current_ = newest->first;
        hard_state.sequence_ = newest->second;
    }
    hard_state.file_ = std::move(file);
    return hard_state;
}

Status HardStateFile::save(const HardState& state) {
    if (is_poisoned_) {
        return Error{Errc::poisoned, (dir_ / hard_state_file_name).string() +
                                         ": an earlier save failed; reopen the hard state file"};
    }
    is_poisoned_ = true;  // until this save is durable
    const auto path = dir_ / hard_state_file_name;
    bool is_created = false;
    if (file_ == nullptr) {
        QUEEN_TRY(file_, file_system_->open(path, OpenMode::create_exclusive));
        is_created = true;
    }
    const std::uint64_t sequence = sequence_ + 1;
    const Slot slot = encode_slot(sequence, state);
    const std::uint64_t offset = (sequence % 2) * hard_state_slot_bytes;
    std::size_t written = 0;
    while (written < slot.size()) {
        QUEEN_TRY(const std::size_t n,
                  file_->write_at(offset + written,
                                  ByteSpan(slot.data() + written, slot.size() - written)));
        written += n;
    }
    QUEEN_TRY(file_->sync_data());
    if (is_created) {
        QUEEN_TRY(file_system_->sync_directory(dir_));
    }
    current_ = state;
    sequence_ = sequence;
    is_poisoned_ = false;
    return {};
}

}  // namespace queen::log
