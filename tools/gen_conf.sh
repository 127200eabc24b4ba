#!/usr/bin/env bash
# tools/gen_conf.sh [QUEEN_BIN] — regenerate conf/queen.toml and docs/settings.md from the binary.
# Lines starting with "#!" are this file's header; the rest must equal `queen serve --print-config`
# (tests/integration/test_serve.py checks it).
set -euo pipefail
cd "$(dirname "$0")/.."
queen=${1:-build/release/cli/queen}
{
  echo "#! conf/queen.toml — Queen settings with their defaults. Every key is optional."
  echo "#! Use: queen serve --config conf/queen.toml; flags (--data-dir, --address, --port, --log-level, --set k=v) win."
  echo "#! Regenerate after changing a default: tools/gen_conf.sh"
  "$queen" serve --print-config
} > conf/queen.toml
python3 tools/gen_settings_doc.py conf/queen.toml > docs/settings.md
