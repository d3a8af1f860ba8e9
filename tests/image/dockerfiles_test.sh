#!/usr/bin/env bash
# docker/*.Dockerfile describe the images scripts/build-images.sh builds (CTest label `image`):
# for each image, the runtime stage's packages (ARG RUNTIME_PACKAGES and DATA_PACKAGES), USER,
# WORKDIR, ENTRYPOINT and ENV are the script's (`--describe`), and it installs the binary and
# the built-in profiles where the script puts them. Needs python3 only.
# Env: REPO_ROOT.
set -euo pipefail
: "${REPO_ROOT:?}"
status=0
for name in operator worker; do
  python3 - "$REPO_ROOT/docker/$name.Dockerfile" "$name" \
    <(bash "$REPO_ROOT/scripts/build-images.sh" --describe "$name") <<'PY' || status=1
import json, re, shlex, sys
path, name, describe = sys.argv[1:]
want = dict(line.rstrip("\n").split(": ", 1) for line in open(describe) if ": " in line)
text = open(path).read()
# Continuation lines joined; the runtime stage is what follows the last FROM.
joined = re.sub(r"\\\n\s*", " ", text)
lines = [l.strip() for l in joined.splitlines() if l.strip() and not l.lstrip().startswith("#")]
last_from = max(i for i, l in enumerate(lines) if l.startswith("FROM "))
stage = lines[last_from:]
errors = []
def instr(word):
    return [l[len(word) + 1:].strip() for l in stage if l.startswith(word + " ")]
args = {}
for a in instr("ARG"):
    m = re.match(r'(\w+)="?(.*?)"?$', a)
    if m:
        args[m.group(1)] = m.group(2).split()
packages = args.get("RUNTIME_PACKAGES", []) + args.get("DATA_PACKAGES", [])
if sorted(packages) != sorted(want["packages"].split()):
    errors.append(f"packages {sorted(packages)} != the script's {sorted(want['packages'].split())}")
if not any("${RUNTIME_PACKAGES}" in r for r in instr("RUN")):
    errors.append("the runtime stage does not install ${RUNTIME_PACKAGES}")
if "DATA_PACKAGES" in args and not any("${DATA_PACKAGES}" in r for r in instr("RUN")):
    errors.append("the runtime stage does not install ${DATA_PACKAGES}")
def one(word):
    got = instr(word)
    return got[-1] if got else None
if one("USER") != want["user"]:
    errors.append(f"USER {one('USER')!r} != the script's {want['user']!r}")
if one("WORKDIR") != want["workdir"]:
    errors.append(f"WORKDIR {one('WORKDIR')!r} != the script's {want['workdir']!r}")
entry = one("ENTRYPOINT")
if entry is None or json.loads(entry) != [want["entrypoint"]]:
    errors.append(f"ENTRYPOINT {entry!r} != the script's [{want['entrypoint']!r}]")
env = sorted(kv for e in instr("ENV") for kv in shlex.split(e))
if env != sorted(want["env"].split()):
    errors.append(f"ENV {env} != the script's {sorted(want['env'].split())}")
for key in ("binary", "profiles"):
    if want[key].lstrip("/") not in text:
        errors.append(f"installs nothing at the script's {key} {want[key]}")
for e in errors:
    print(f"FAIL: docker/{name}.Dockerfile: {e}", file=sys.stderr)
if not errors:
    print(f"docker/{name}.Dockerfile: in step with scripts/build-images.sh")
sys.exit(1 if errors else 0)
PY
done
exit "$status"
