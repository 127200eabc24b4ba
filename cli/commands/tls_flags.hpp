// cli/commands/tls_flags.hpp — the TLS flags of the commands that talk to a broker over its client
// port (`queen bench`, `queen admin`): trusted CAs, a client certificate, --insecure.
#pragma once

#include <string>
#include <string_view>

#include "queen/client/connection.hpp"
#include "queen/core/result.hpp"

namespace CLI {
class App;
}

namespace queen::cli {

/// --ca-file, --client-cert, --client-key, --insecure (used with an https:// URL only).
struct TlsFlags {
    std::string ca_file;             ///< empty: the system's trust store
    std::string client_certificate;  ///< with client_key: for a broker that requires one
    std::string client_key;
    bool insecure = false;  ///< accept any certificate (a warning goes to stderr)
};

/// Adds the flags to `command`; `ca_file_env` non-null: --ca-file also reads that variable.
void add_tls_flags(CLI::App* command, TlsFlags& flags, const char* ca_file_env = nullptr);

/// The client's TLS options of `flags`. For an https:// `endpoint` with --insecure, prints
/// "<command>: --insecure: ..." to stderr. Errors: queen::Errc::invalid_argument (--client-cert
/// without --client-key, or the reverse).
[[nodiscard]] queen::Result<client::TlsClientOptions> tls_options_of(
    const TlsFlags& flags, const client::Endpoint& endpoint, std::string_view command);

}  // namespace queen::cli
