// modules/log/src/truncation.cpp — removing records: truncate_suffix() (raft conflict
// resolution: later segments deleted, the last one cut), drop_prefix() (compaction) and
// reset() (a snapshot replaced everything).
#include <algorithm>
#include <mutex>
#include <shared_mutex>

#include "log_impl.hpp"

namespace queen::log {

/// Caller holds io_mutex exclusively and `mutex`, with the writer idle.
Status Log::Impl::truncate_locked(LogIndex last_kept) {
    QUEEN_TRY(const Term new_last_term, term_at_locked(last_kept));
    bool removed = false;
    while (segments.size() > 1 && segments.back()->header.first_index > last_kept) {
        QUEEN_TRY(env.file_system->remove(segments.back()->path));
        segments.pop_back();
        removed = true;
    }
    if (removed) {
        QUEEN_TRY(env.file_system->sync_directory(dir));
    }
    detail::Segment& segment = *segments.back();
    if (segment.last_index > last_kept) {
        std::uint64_t cut = segment_header_size;
        if (last_kept >= segment.header.first_index) {
            QUEEN_TRY(cut, offset_of(segment, last_kept.next()));
        }
        drop_direct(segment);
        QUEEN_TRY(segment.file->truncate(cut));
        QUEEN_TRY(segment.file->sync_data());
        segment.size_bytes = cut;
        segment.file_bytes = cut;
        segment.last_index = std::max(last_kept, segment.header.first_index.prev());
        segment.last_term = new_last_term;
        while (!segment.sparse.empty() && segment.sparse.back().index > last_kept) {
            segment.sparse.pop_back();
        }
    }
    while (!terms.empty() && terms.back().first > last_kept) {
        terms.pop_back();
    }
    last_index = last_kept;
    last_term = new_last_term;
    written_index = std::min(written_index, last_kept);
    durable_index = std::min(durable_index, last_kept);
    QUEEN_LOG(*env.logger, Level::info, "log.suffix_truncated",
              "dir=" << dir.string() << " last_kept=" << last_kept.value());
    return {};
}

Status Log::truncate_suffix(LogIndex last_kept) {
    std::unique_lock io(impl_->io_mutex);
    std::unique_lock lock(impl_->mutex);
    QUEEN_TRY(impl_->usable_locked());
    impl_->wait_idle(lock);
    QUEEN_TRY(impl_->usable_locked());
    if (last_kept < impl_->first_index.prev() || last_kept > impl_->last_index) {
        return Error{Errc::out_of_range, "truncate_suffix " + std::to_string(last_kept.value()) +
                                             ": log holds [" +
                                             std::to_string(impl_->first_index.value()) + ", " +
                                             std::to_string(impl_->last_index.value()) + "]"};
    }
    if (last_kept == impl_->last_index) {
        return {};
    }
    Status status = impl_->truncate_locked(last_kept);
    if (!status) {
        impl_->poison_locked(std::move(status).error());
        return impl_->poisoned_error_locked();
    }
    return {};
}

Status Log::drop_prefix(LogIndex first_kept) {
    std::unique_lock io(impl_->io_mutex);
    std::unique_lock lock(impl_->mutex);
    QUEEN_TRY(impl_->usable_locked());
    impl_->wait_idle(lock);
    QUEEN_TRY(impl_->usable_locked());
    if (first_kept > impl_->last_index.next()) {
        return Error{Errc::out_of_range, "drop_prefix " + std::to_string(first_kept.value()) +
                                             ": last index is " +
                                             std::to_string(impl_->last_index.value())};
    }
    auto& segments = impl_->segments;
    std::size_t count = 0;
    while (count + 1 < segments.size() && segments[count + 1]->header.first_index <= first_kept) {
        ++count;
    }
    if (count == 0) {
        return {};
    }
    auto fail = [&](Error error) -> Status {
        impl_->poison_locked(std::move(error));
        return impl_->poisoned_error_locked();
    };
    std::size_t removed = 0;
    for (; removed < count; ++removed) {  // oldest first: a crash leaves a suffix of segments
        if (Status status = impl_->env.file_system->remove(segments[removed]->path); !status) {
            segments.erase(segments.begin(),
                           segments.begin() + static_cast<std::ptrdiff_t>(removed));
            return fail(std::move(status).error());
        }
    }
    segments.erase(segments.begin(), segments.begin() + static_cast<std::ptrdiff_t>(count));
    impl_->first_index = segments.front()->header.first_index;
    impl_->prev_term = segments.front()->header.prev_term;
    auto& terms = impl_->terms;
    std::size_t drop = 0;
    while (drop + 1 < terms.size() && terms[drop + 1].first <= impl_->first_index) {
        ++drop;
    }
    terms.erase(terms.begin(), terms.begin() + static_cast<std::ptrdiff_t>(drop));
    if (!terms.empty() && terms.front().first < impl_->first_index) {
        if (impl_->first_index > impl_->last_index) {
            terms.clear();
        } else {
            terms.front().first = impl_->first_index;
        }
    }
    if (Status status = impl_->env.file_system->sync_directory(impl_->dir); !status) {
        return fail(std::move(status).error());
    }
    QUEEN_LOG(*impl_->env.logger, Level::info, "log.prefix_dropped",
              "dir=" << impl_->dir.string() << " segments=" << count
                     << " first_index=" << impl_->first_index.value());
    return {};
}

Status Log::reset(LogIndex last, Term term) {
    std::unique_lock io(impl_->io_mutex);
    std::unique_lock lock(impl_->mutex);
    QUEEN_TRY(impl_->usable_locked());
    impl_->wait_idle(lock);
    QUEEN_TRY(impl_->usable_locked());
    Impl& r = *impl_;
    const auto fail = [&](Error error) -> Status {
        r.poison_locked(std::move(error));
        return r.poisoned_error_locked();
    };
    // Newest first: a crash leaves a prefix of the old log.
    while (!r.segments.empty()) {
        Impl::drop_direct(*r.segments.back());
        if (Status removed = r.env.file_system->remove(r.segments.back()->path); !removed) {
            return fail(std::move(removed).error());
        }
        r.segments.pop_back();
    }
    if (Status synced = r.env.file_system->sync_directory(r.dir); !synced) {
        return fail(std::move(synced).error());
    }
    SegmentHeader header;
    header.first_index = last.next();
    header.prev_term = term;
    std::uint64_t sync_ns = 0;
    auto segment = r.create_segment_file(header, sync_ns);
    if (!segment) {
        return fail(segment.error());
    }
    r.record_sync_locked(sync_ns);
    r.segments.push_back(std::move(*segment));
    r.terms.clear();
    r.first_index = last.next();
    r.prev_term = term;
    r.last_index = last;
    r.last_term = term;
    r.written_index = last;
    r.durable_index = last;
    QUEEN_LOG(*r.env.logger, Level::info, "log.reset",
              "dir=" << r.dir.string() << " first_index=" << r.first_index.value()
                     << " prev_term=" << term.value());
    return {};
}

}  // namespace queen::log
