// queues/src/layout.hpp — the layout version of the queue tables and the migration of older
// layouts (docs/engine.md, "Layout versions").
//
// The version is the format byte of the "q.meta" record "state" (the record every other record's
// meaning hangs on). Layout 1 (Queen before issue 26) keyed transaction ids by partition first
// in "q.txids"; layout 2 keys them in "q.ids" by the id's 16 bytes first when it is a UUID.
// Layout 3 moves message blocks from "q.messages" (keyed by partition and first sequence) to
// "q.blocks" (keyed by apply order, chained per partition; messages.hpp).
// QueueState::open migrates layout 1 data in place, in bounded txns: the first writes the meta
// record in layout 2's format (so an older binary refuses the data: it reads an undecodable
// meta record) and a marker key; the last removes the marker. A crash in between resumes on the
// next open. Data of a newer layout is refused.
#pragma once

#include <cstdint>
#include <string_view>

#include "queen/core/result.hpp"
#include "queen/queues/queries.hpp"
#include "queen/store/env.hpp"
#include "records.hpp"

namespace queen::queues::detail {

/// Layout 1's transaction id table (absent from data created in layout 2).
inline constexpr std::string_view layout1_ids_table = "q.txids";
/// Layout 2's message table (absent from data created in layout 3).
inline constexpr std::string_view layout2_messages_table = "q.messages";
/// The "q.meta" key present while a migration is under way.
inline constexpr std::string_view layout_migrating_key = "layout.migrating";

struct LayoutReport {
    std::uint8_t from = layout_version;  ///< the layout found
    bool is_migrated = false;            ///< a migration ran (or finished one a crash left)
    std::uint64_t ids_moved = 0;         ///< transaction ids rewritten
    std::uint64_t blocks_moved = 0;      ///< message blocks rewritten
};

/// Brings the queue tables of `env` to layout_version (see the file comment). Call before
/// anything reads them, with no txn of `env` open on the calling thread.
/// Errors: Errc::corruption (a newer layout, or undecodable layout 1 entries), and those of
/// Env::write.
Result<LayoutReport> migrate_layout(store::Env& env, const Tables& tables);

}  // namespace queen::queues::detail
