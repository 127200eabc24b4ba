// core/memory.cpp — release_free_memory(): tcmalloc's release when loaded, else malloc_trim.
#include "queen/core/memory.hpp"

#include <dlfcn.h>
#include <malloc.h>

namespace queen {

namespace {

using ReleaseFunction = void (*)();

/// tcmalloc's C entry point, or nullptr under glibc's malloc (looked up once).
ReleaseFunction tcmalloc_release() noexcept {
    static const ReleaseFunction function = [] {
        void* symbol = dlsym(RTLD_DEFAULT, "MallocExtension_ReleaseFreeMemory");
        return reinterpret_cast<ReleaseFunction>(symbol);
    }();
    return function;
}

}  // namespace

void release_free_memory() noexcept {
    if (const ReleaseFunction release = tcmalloc_release(); release != nullptr) {
        release();
        return;
    }
    (void)malloc_trim(0);
}

}  // namespace queen
