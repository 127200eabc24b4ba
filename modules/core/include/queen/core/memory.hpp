// core/memory.hpp — hands the allocator's free memory back to the operating system.
#pragma once

namespace queen {

/// Returns the memory the allocator keeps free to the operating system, so the resident size
/// falls back after a burst of large requests (a 16 MiB body parsed by each of 16 connections at
/// once left ~250 MB resident for good). The `queen` executable runs on tcmalloc, which keeps
/// freed spans for reuse: this calls its MallocExtension_ReleaseFreeMemory() when it is loaded
/// (found at run time, so nothing links against it), else glibc's malloc_trim(0). It costs a
/// walk of the free lists and an madvise per free run of pages: call it after rare large
/// requests, never per request. Thread-safe.
void release_free_memory() noexcept;

}  // namespace queen
