#!/usr/bin/env bash
# Checks what can be checked here without installing anything or a container engine:
#  - the systemd unit passes `systemd-analyze verify` (with ExecStart pointing at JOBCTL, the
#    built binary, since /usr/local/bin/jobctl need not exist on this machine);
#  - the compose file is valid YAML with the services, images and settings the docs describe;
#  - the Dockerfile's runtime packages exist in this machine's Debian archive (apt-cache).
# Usage: deploy/check.sh PATH/TO/jobctl
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
jobctl="$(realpath "${1:?usage: deploy/check.sh PATH/TO/jobctl}")"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

sed "s|/usr/local/bin/jobctl|$jobctl|g" "$here/systemd/jobctl-worker@.service" > "$work/jobctl-worker@.service"
cp "$work/jobctl-worker@.service" "$work/jobctl-worker@1.service"
for unit in "jobctl-worker@.service" "jobctl-worker@1.service"; do
    output="$(cd "$work" && systemd-analyze verify "./$unit" 2>&1 || true)"
    if [ -n "$output" ]; then
        echo "systemd-analyze verify $unit:"; echo "$output"; exit 1
    fi
done
grep -q '^MemoryMax=' "$here/systemd/jobctl-worker@.service" || { echo "the unit has no MemoryMax"; exit 1; }
sed "s|/usr/local/bin/jobctl|$jobctl|g" "$here/systemd/jobctl-serve.service" > "$work/jobctl-serve.service"
output="$(cd "$work" && systemd-analyze verify "./jobctl-serve.service" 2>&1 || true)"
if [ -n "$output" ]; then
    echo "systemd-analyze verify jobctl-serve.service:"; echo "$output"; exit 1
fi
echo "ok: systemd-analyze verify (template, instance and serve), MemoryMax set"

python3 - "$here/compose.yaml" <<'PY'
import sys, yaml
compose = yaml.safe_load(open(sys.argv[1]))
services = compose["services"]
assert "postgres" in services, "no postgres service"
workers = [name for name in services if name.startswith("worker")]
assert len(workers) >= 2, f"expected a few workers, got {workers}"
for name in workers + ["migrate"]:
    service = services[name]
    assert "JOBCTL_DB" in service["environment"], f"{name}: no JOBCTL_DB"
    assert service["environment"]["JOBCTL_DB"].startswith("postgres://"), name
for name in workers:
    service = services[name]
    assert service.get("stop_signal", "SIGTERM") == "SIGTERM", name
    grace = service["stop_grace_period"]
    assert grace.endswith("s") and int(grace[:-1]) > 60, f"{name}: stop_grace_period {grace} must exceed the 60s drain"
    assert service["depends_on"]["migrate"]["condition"] == "service_completed_successfully", name
    assert str(service.get("mem_limit", "")).endswith("g"), f"{name}: a memory cap (mem_limit) kills a runaway worker alone"
assert services["postgres"]["healthcheck"]["test"], "postgres needs a healthcheck"
api = services["api"]
assert api["command"][0] == "serve" and "0.0.0.0:8080" in api["command"], "api: jobctl serve on 0.0.0.0:8080"
assert api["environment"]["JOBCTL_DB"].startswith("postgres://"), "api: no JOBCTL_DB"
assert api["depends_on"]["migrate"]["condition"] == "service_completed_successfully", "api"
assert int(api["stop_grace_period"][:-1]) > 60, "api: stop_grace_period must exceed the longest long poll"
def roots(command):
    flags = {command[i]: command[i + 1] for i in range(len(command) - 1) if command[i].endswith("-root")}
    return flags.get("--input-root"), flags.get("--output-root")
for name in workers:
    assert roots(services[name]["command"]) == roots(api["command"]), f"{name}: the API's roots (workers resolve its keys' paths there)"
inputs, outputs = roots(api["command"])
assert inputs and outputs and inputs != outputs, "api: inputs and outputs under roots of their own"
print(f"ok: compose.yaml ({len(services)} services: {', '.join(services)})")
PY

packages="$(sed -n 's/^ARG RUNTIME_PACKAGES="\(.*\)"$/\1/p' "$here/Dockerfile" | head -1)"
[ -n "$packages" ] || { echo "Dockerfile: no RUNTIME_PACKAGES line"; exit 1; }
for package in $packages; do
    apt-cache show "$package" > /dev/null 2>&1 || { echo "Dockerfile: package $package is not in this Debian's archive"; exit 1; }
done
echo "ok: Dockerfile runtime packages exist ($packages)"
