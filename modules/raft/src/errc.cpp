// modules/raft/src/errc.cpp — the "raft" error category.
#include "queen/raft/errc.hpp"

#include <string>

namespace queen::raft {
namespace {

class Category final : public std::error_category {
public:
    [[nodiscard]] const char* name() const noexcept override { return "raft"; }
    [[nodiscard]] std::string message(int code) const override {
        switch (static_cast<Errc>(code)) {
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
        return "unknown raft error " + std::to_string(code);
    }
};

}  // namespace

const std::error_category& error_category() noexcept {
    static const Category category;
    return category;
}

}  // namespace queen::raft
