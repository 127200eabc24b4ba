// cli/commands/tls_flags.cpp — the TLS flags shared by `queen bench` and `queen admin`.
#include "commands/tls_flags.hpp"

#include <CLI/CLI.hpp>
#include <cstdio>

namespace queen::cli {

void add_tls_flags(CLI::App* command, TlsFlags& flags, const char* ca_file_env) {
    const std::string env = ca_file_env != nullptr ? std::string{"or "} + ca_file_env + "; " : "";
    const std::string ca_help =
        "CA certificates (PEM) for an https:// broker (" + env + "default: the system's)";
    auto* ca_file =
        command->add_option("--ca-file", flags.ca_file, ca_help)->check(CLI::ExistingFile);
    if (ca_file_env != nullptr) {
        ca_file->envname(ca_file_env);
    }
    command
        ->add_option("--client-cert", flags.client_certificate,
                     "Client certificate (PEM) for a broker that requires one")
        ->check(CLI::ExistingFile);
    command->add_option("--client-key", flags.client_key, "Private key (PEM) of --client-cert")
        ->check(CLI::ExistingFile);
    command->add_flag("--insecure", flags.insecure,
                      "Do not verify the broker's certificate (tests only)");
}

queen::Result<client::TlsClientOptions> tls_options_of(const TlsFlags& flags,
                                                       const client::Endpoint& endpoint,
                                                       std::string_view command) {
    if (flags.client_certificate.empty() != flags.client_key.empty()) {
        return queen::Error{queen::Errc::invalid_argument,
                            "--client-cert and --client-key go together"};
    }
    client::TlsClientOptions tls;
    tls.ca_file = flags.ca_file;
    tls.certificate_file = flags.client_certificate;
    tls.key_file = flags.client_key;
    tls.is_verify_disabled = flags.insecure;
    if (flags.insecure && endpoint.is_tls) {
        std::fprintf(stderr,
                     "%.*s: warning: --insecure: the broker's certificate is not verified; "
                     "anyone on the path can read and change this traffic\n",
                     static_cast<int>(command.size()), command.data());
    }
    return tls;
}

}  // namespace queen::cli
