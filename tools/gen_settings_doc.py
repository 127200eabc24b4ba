#!/usr/bin/env python3
"""tools/gen_settings_doc.py CONF — render docs/settings.md from conf/queen.toml (itself generated
from the binary's schema by tools/gen_conf.sh), so the reference never drifts from the code."""
import re
import sys

conf = open(sys.argv[1]).read().splitlines()
out = ["# Settings", "",
       "Queen reads one TOML file (`queen serve --config FILE`). Every key is optional; the",
       "defaults below are the embedded single-node config. Flags override the file:",
       "`--data-dir` (node.data_dir), `--address` (http.address), `--port` (http.port), `--log-level`",
       "(logging.level), and `--set section.key=value` for any key (a list as comma-separated values;",
       "an empty value is an empty list). An unknown key, a wrong type or a value out of range is an",
       "error that names the full key path (a key that was removed also says what replaced it), and",
       "`queen serve` exits with code 2. `queen serve` starts with a short banner on stderr (version,",
       "URL, data directory, where the settings came from); `queen serve --print-config` prints the",
       "effective settings in this format, and so does `queen serve` at start with `logging.level` at",
       "`debug` or `trace`.",
       "",
       "Environment: `QUEEN_ENCRYPTION_KEY` (64 hex digits) overrides `security.encryption_key`.",
       "",
       "## Network exposure",
       "",
       "Authentication is off by default (`auth.enabled`; docs/security.md, \"Authentication\"): then",
       "whoever reaches the HTTP port can read, push and delete everything. So the defaults keep it",
       "on this machine, and a node listening beyond loopback without `auth.enabled` says so at",
       "start (its banner's `auth` line and an `auth.disabled` warning in its log):",
       "",
       "- `http.address` is `127.0.0.1`. Listening on other addresses is this one setting (or",
       "  `queen serve --address`, or `make serve ADDRESS=...`): `0.0.0.0` accepts IPv4 clients on",
       "  every interface, `::` IPv6 ones (and IPv4 ones too unless the system sets",
       "  `net.ipv6.bindv6only`), another address only that interface.",
       "- `http.cors_allowed_origins` is empty, so a web page (any site a user of this machine opens)",
       "  cannot call the broker from the browser. List exact origins to allow them, as the browser",
       "  sends them in `Origin`: scheme, host and port, no path (`[\"http://localhost:3000\"]`).",
       "  `\"*\"` allows every origin and must be written explicitly. A request whose `Origin` is",
       "  listed gets `Access-Control-Allow-Origin` with that origin (or `*`), the",
       "  `http.cors_allow_methods` and `http.cors_allow_headers` values, and `Vary: Origin`; its",
       "  `OPTIONS` preflight gets `204` with the same plus `Access-Control-Max-Age`. Any other",
       "  request gets no CORS header, and its preflight a bare `204`. While the list is not empty",
       "  every answer carries `Vary: Origin`.",
       "- `http.cors_enabled` and `http.cors_allow_origin` no longer exist; a config naming them is",
       "  refused with a message pointing at `http.cors_allowed_origins`."]
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
