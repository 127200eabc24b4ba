#!/usr/bin/env python3
"""tools/check_layers.py — enforce the module layering of docs/architecture.md section 1 and docs/development.md "Layering rules".

Reads every modules/<m>/CMakeLists.txt for `queen_module(<m> LAYER <n> DEPS ...)` and checks:
  * a module depends only on modules of a lower layer;
  * every `#include "queen/<x>/..."` in a module names the module itself or one of its
    (transitive) dependencies, and never `queen/<x>/detail/` of another module;
  * third-party headers stay where the layering rules allow them (lmdb.h in store/src only, asio and
    nlohmann/toml++ never in public headers).
Exit 1 with one line per violation."""
import pathlib
import re
import sys

root = pathlib.Path(__file__).resolve().parent.parent
modules = {}
for cml in sorted((root / "modules").glob("*/CMakeLists.txt")):
    text = cml.read_text()
    m = re.search(r"queen_module\(\s*(\w+)(.*?)\)", text, re.S)
    if not m:
        continue
    name, args = m.group(1), m.group(2)
    layer = re.search(r"LAYER\s+(\d+)", args)
    deps = re.search(r"DEPS((?:\s+\w+)+?)(?=\s+(?:PRIVATE_LIBS|PUBLIC_LIBS|TEST_LIBS|LAYER)|\s*$)", args, re.S)
    modules[name] = {
        "layer": int(layer.group(1)) if layer else None,
        "deps": deps.group(1).split() if deps else [],
        "dir": cml.parent,
    }

errors = []
for name, info in modules.items():
    if info["layer"] is None:
        errors.append(f"modules/{name}: queen_module() has no LAYER")
    for dep in info["deps"]:
        if dep not in modules:
            errors.append(f"modules/{name}: depends on unknown module {dep}")
        elif modules[dep]["layer"] is not None and info["layer"] is not None and modules[dep]["layer"] >= info["layer"]:
            errors.append(f"modules/{name} (L{info['layer']}) depends on {dep} (L{modules[dep]['layer']}): dependencies must point down")


def closure(name, seen=None):
    seen = set() if seen is None else seen
    for dep in modules.get(name, {}).get("deps", []):
        if dep not in seen:
            seen.add(dep)
            closure(dep, seen)
    return seen


include_re = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]', re.M)
allowed_third_party = {
    "lmdb.h": lambda mod, rel: mod == "store" and rel.parts[0] in ("src", "tests"),
}
public_banned = ("asio", "asio.hpp", "nlohmann/", "toml++/", "lmdb.h", "CLI/", "openssl/")
for name, info in modules.items():
    allowed = closure(name) | {name, "testing"}
    for path in sorted(info["dir"].rglob("*")):
        if path.suffix not in (".hpp", ".cpp", ".h", ".cc"):
            continue
        rel = path.relative_to(info["dir"])
        text = path.read_text(errors="replace")
        for inc in include_re.findall(text):
            where = f"modules/{name}/{rel}"
            qm = re.match(r"queen/(\w+)/(.*)", inc)
            if qm:
                target, rest = qm.group(1), qm.group(2)
                if target not in allowed:
                    errors.append(f"{where}: includes {inc} but {name} does not depend on {target}")
                elif target != name and rest.startswith("detail/"):
                    errors.append(f"{where}: includes {inc}, a detail header of another module")
            if inc in allowed_third_party and not allowed_third_party[inc](name, rel):
                errors.append(f"{where}: includes {inc}, which only modules/store/src may include")
            if rel.parts[0] == "include" and inc.startswith(public_banned):
                errors.append(f"{where}: public header includes third-party {inc} (keep it private)")

for e in errors:
    print(e)
print(f"check_layers: {len(modules)} modules, {len(errors)} violations")
sys.exit(1 if errors else 0)
