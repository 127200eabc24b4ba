// client/tests/test_helpers.hpp — what several client test files share: the broker of the hidden
// end-to-end cases, and a random window spec for the property tests.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <memory>

#include "queen/client/client.hpp"
#include "queen/client/windows.hpp"
#include "queen/core/rng.hpp"

namespace queen::client::testing {

/// A client of the broker QUEEN_E2E_URL names (no retries), null when it is not set: the
/// hidden "[.e2e]" cases then warn and pass.
inline std::unique_ptr<Client> connect_or_skip() {
    const char* url = std::getenv("QUEEN_E2E_URL");
    if (url == nullptr) {
        return nullptr;
    }
    ClientOptions options;
    options.endpoint = parse_url(url).value();
    options.retry_attempts = 0;
    return std::make_unique<Client>(options);
}

/// A window spec of any kind, time mode (processing with `processing_chance`), lateness, late
/// policy and aggregation, small enough that random streams close many windows.
inline WindowSpec random_spec(queen::Rng& rng, double processing_chance) {
    WindowSpec spec;
    switch (rng.below(3)) {
        case 0: spec = WindowSpec::tumbling(std::chrono::milliseconds(rng.between(1, 40))); break;
        case 1: {
            const auto size = static_cast<std::int64_t>(rng.between(1, 40));
            spec = WindowSpec::sliding(std::chrono::milliseconds(size),
                                       std::chrono::milliseconds(rng.between(1, size)));
            break;
        }
        default: spec = WindowSpec::session(std::chrono::milliseconds(rng.between(1, 30)));
    }
    spec.time = rng.chance(processing_chance) ? WindowTime::processing : WindowTime::event;
    spec.allowed_lateness_ms = rng.chance(0.3) ? 0 : static_cast<std::int64_t>(rng.below(30));
    spec.late = static_cast<LatePolicy>(rng.below(3));
    switch (rng.below(6)) {
        case 0: spec.aggregation = Aggregation::count(); break;
        case 1: spec.aggregation = Aggregation::sum(); break;
        case 2: spec.aggregation = Aggregation::min(); break;
        case 3: spec.aggregation = Aggregation::max(); break;
        case 4: spec.aggregation = Aggregation::avg(); break;
        default:
            // Sums of squares of integers: exact in any merge order.
            spec.aggregation = Aggregation::custom(
                0, [](double acc, double v) { return acc + v * v; },
                [](double a, double b) { return a + b; });
    }
    return spec;
}

}  // namespace queen::client::testing
