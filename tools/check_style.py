#!/usr/bin/env python3
"""tools/check_style.py — the bans of docs/development.md "Layering rules", outside core/ and cli/.

Library code must not read clocks, draw randomness or sleep on its own (time and randomness are
injected), and must not print to stdout/stderr (it logs through a Logger&). Tests, tools and simulators (sim/) may.
A test case's name must not hold ';': catch_discover_tests splits the name there, and ctest then
runs two names that match no test case, which Catch answers with success (the test never runs)."""
import pathlib
import re
import sys

root = pathlib.Path(__file__).resolve().parent.parent
banned = [
    (re.compile(r"steady_clock::now|system_clock::now|high_resolution_clock::now"), "reads a clock (inject queen::Clock)"),
    (re.compile(r"std::random_device|\brand\s*\(|\bsrand\s*\("), "draws randomness (inject queen::Rng)"),
    (re.compile(r"sleep_for|\busleep\s*\(|\bnanosleep\s*\("), "sleeps (await an event or inject the wait)"),
    (re.compile(r"std::cout|std::cerr|\bprintf\s*\(|\bputs\s*\("), "prints (log through queen::Logger)"),
]
errors = []
for path in sorted((root / "modules").rglob("*")):
    if path.suffix not in (".hpp", ".cpp"):
        continue
    rel = path.relative_to(root)
    parts = rel.parts
    if parts[1] == "core" or "tests" in parts or "fuzz" in parts or "tools" in parts or "sim" in parts:
        continue
    for lineno, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
        code = line.split("//", 1)[0]
        for pattern, why in banned:
            if pattern.search(code):
                errors.append(f"{rel}:{lineno}: {why}: {line.strip()}")
test_case = re.compile(r'TEST_CASE\(\s*((?:"(?:[^"\\]|\\.)*"\s*)+)', re.S)
for path in sorted(root.glob("**/tests/**/*.cpp")):
    if "build" in path.relative_to(root).parts:
        continue
    text = path.read_text(errors="replace")
    for match in test_case.finditer(text):
        name = "".join(re.findall(r'"((?:[^"\\]|\\.)*)"', match.group(1)))
        if ";" in name:
            lineno = text.count("\n", 0, match.start()) + 1
            errors.append(f"{path.relative_to(root)}:{lineno}: a test case name with ';' never runs under ctest: {name}")
for e in errors:
    print(e)
print(f"check_style: {len(errors)} violations")
sys.exit(1 if errors else 0)
