// queen/engine/stream.hpp — the engine's commands of the streams endpoints (docs/engine.md):
// a query's registration now; the cycle (state ops + sink pushes + the ack of the source batch,
// one entry) and the admin commands come next. The state lives in modules/streams.
#pragma once

#include <string>

#include "queen/streams/streams.hpp"

namespace queen::engine {

/// POST /streams/v1/queries: registers (or finds, or resets) a stream query
/// (streams::Register; `new_query_id` is generated at the HTTP edge so every replica stores the
/// same). Its answer: StreamRegisterResult.
struct StreamRegister {
    streams::Register query;
};
struct StreamRegisterResult {
    streams::RegisterResult result;
};

}  // namespace queen::engine
