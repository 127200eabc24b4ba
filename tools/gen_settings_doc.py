#!/usr/bin/env python3
"""tools/gen_settings_doc.py CONF — render docs/settings.md from conf/queen.toml (itself generated
from the binary's schema by tools/gen_conf.sh), so the reference never drifts from the code."""
import re
import sys

conf = open(sys.argv[1]).read().splitlines()
out = ["# Settings", "",
       "Queen reads one TOML file (`queen serve --config FILE`). Every key is optional; the",
       "defaults below are the embedded single-node config. Flags override the file:",
       "`--data-dir` (node.data_dir), `--port` (http.port), `--log-level` (logging.level), and",
       "`--set section.key=value` for any key. An unknown key, a wrong type or a value out of range is",
       "an error that names the full key path, and `queen serve` exits with code 2.",
       "`queen serve --print-config` prints the effective settings in this format.",
       "",
       "Environment: `QUEEN_ENCRYPTION_KEY` (64 hex digits) overrides `security.encryption_key`.",
       ""]
section = None
comment = []
for line in conf:
    if line.startswith("#!"):
        continue
    if line.startswith("# "):
        comment.append(line[2:])
        continue
    m = re.match(r"\[(.+)\]", line)
    if m:
        section = m.group(1)
        out += ["", f"## [{section}]", ""]
        if comment:
            out += [" ".join(comment), ""]
        out += ["| Key | Default | Meaning |", "|---|---|---|"]
        comment = []
        continue
    m = re.match(r"(\w+) = (.*)", line)
    if m:
        key, value = m.groups()
        full = f"{section}.{key}" if section else key
        out.append(f"| `{full}` | `{value}` | {' '.join(comment)} |")
        comment = []
print("\n".join(out))
