#!/usr/bin/env bash
# Checks the deployment files offline (CI runs this from .ci/run; runnable by hand):
#   - deploy/k8s: rendered by kustomize (`kubectl kustomize`, on the machine image), then validated
#     with kubernetes-validate --strict against the Kubernetes schemas it bundles;
#   - deploy/Dockerfile: hadolint;
#   - deploy/compose.yaml: validated against the compose-spec schema (check-jsonschema's vendored
#     copy); `docker compose config` itself is not available here.
# The checkers run without network (`unshare -n`, where the kernel allows it) to prove they need
# none. What this cannot check (building the image, running the manifests) is said in README.md.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="$here/.venv"
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
stamp="$venv/.requirements.sha256"
want="$(sha256sum "$here/requirements-check.txt" | cut -d' ' -f1)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$here/requirements-check.txt"
  echo "$want" > "$stamp"
fi

offline() {
  if unshare -n true 2>/dev/null; then unshare -n "$@"; else "$@"; fi
}

out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT

echo "== kubernetes manifests"
if command -v kubectl >/dev/null 2>&1; then
  offline kubectl kustomize --load-restrictor LoadRestrictionsNone "$here/k8s" > "$out/rendered.yaml"
  offline "$venv/bin/kubernetes-validate" --strict --quiet "$out/rendered.yaml"
  kinds="$(grep -c '^kind:' "$out/rendered.yaml")"
  echo "kustomize render: $kinds resources valid (kubernetes-validate --strict)"
else
  echo "WARNING: kubectl (kustomize) not found: validating the resource files without the generated ConfigMap" >&2
  offline "$venv/bin/kubernetes-validate" --strict --quiet "$here"/k8s/switchboard.yaml "$here"/k8s/redis.yaml \
    "$here"/k8s/secret.example.yaml
fi

echo "== Dockerfile"
offline "$venv/bin/hadolint" "$here/Dockerfile"
echo "hadolint: no findings"

echo "== compose"
offline "$venv/bin/check-jsonschema" --builtin-schema vendor.compose-spec "$here/compose.yaml"
