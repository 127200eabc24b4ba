// modules/raft/src/errc.cpp — the "raft" error category.
#include "queen/raft/errc.hpp"

#include <string>

#include "queen/core/error.hpp"

namespace queen::raft {
namespace {

std::string_view describe(Errc e) noexcept {
    switch (e) {
        case Errc::ok: return "ok";
        case Errc::not_leader: return "not the leader";
        case Errc::busy: return "busy";
        case Errc::transferring: return "leadership transfer in progress";
        case Errc::dropped: return "dropped";
        case Errc::invalid_conf_change: return "invalid configuration change";
        case Errc::compacted: return "index compacted";
        case Errc::unavailable: return "index unavailable";
        case Errc::decode: return "decode error";
        case Errc::unsupported_version: return "unsupported version";
        case Errc::too_large: return "too large";
    }
    return {};
}

}  // namespace

const std::error_category& error_category() noexcept {
    static const EnumErrorCategory<Errc, describe> category("raft", "unknown raft error ");
    return category;
}

}  // namespace queen::raft
