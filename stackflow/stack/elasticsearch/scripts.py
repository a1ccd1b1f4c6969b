"""Contents of the ``<es>-es-scripts`` ConfigMap: filesystem preparation, probe and suspend scripts."""

from __future__ import annotations

from collections.abc import Iterable

from stackflow.stack.elasticsearch.config import (
    CONFIG_DIR,
    CONFIG_MOUNT_DIR,
    DATA_DIR,
    DOWNWARD_API_MOUNT_DIR,
    FILE_REALM_MOUNT_DIR,
    HTTP_CERTS_DIR,
    HTTP_PORT,
    LOGS_DIR,
    PROBE_USER_MOUNT_DIR,
    READINESS_PORT,
    SCRIPTS_MOUNT_DIR,
    UNICAST_HOSTS_MOUNT_DIR,
)
from stackflow.stack.labels import ES_CLUSTER_NAME_LABEL, ES_VERSION_LABEL

#: The user the pre-stop hook calls the node shutdown API as (ECK's name; role ``manage``).
PRE_STOP_USER = "elastic-internal-pre-stop"

#: ECK's keys: the suspend init container's script, and the Pods it holds back, one per line.
SUSPEND_SCRIPT_KEY = "suspend.sh"
SUSPENDED_PODS_KEY = "suspended_pods.txt"
#: The annotation listing the Pods to suspend (its name is what the suspended Pod's log says).
SUSPEND_ANNOTATION = "eck.k8s.elastic.co/suspend"

#: Where the prepare-fs init container mounts the emptyDirs that the node container mounts in place of
#: the image's ``config``, ``plugins`` and ``bin`` (ECK's paths), so the root filesystem can be read-only.
CONFIG_LOCAL_DIR = "/mnt/elastic-internal/elasticsearch-config-local"
PLUGINS_LOCAL_DIR = "/mnt/elastic-internal/elasticsearch-plugins-local"
BIN_LOCAL_DIR = "/mnt/elastic-internal/elasticsearch-bin-local"
#: The image's directories those emptyDirs replace in the node container.
IMAGE_HOME = "/usr/share/elasticsearch"
PLUGINS_DIR = f"{IMAGE_HOME}/plugins"
BIN_DIR = f"{IMAGE_HOME}/bin"
#: Where the init container reads the node set's transport certificates: outside the image's
#: config directory, which it copies whole (ECK's path).
INIT_TRANSPORT_CERTS_DIR = "/mnt/elastic-internal/transport-certificates"
#: The exit code of prepare-fs on an image that is not Elasticsearch's default distribution.
UNSUPPORTED_DISTRIBUTION_EXIT = 42

_SHARED_DIRS = " ".join(
    f"{image}:{local}"
    for image, local in (
        (CONFIG_DIR, CONFIG_LOCAL_DIR),
        (PLUGINS_DIR, PLUGINS_LOCAL_DIR),
        (BIN_DIR, BIN_LOCAL_DIR),
    )
)
_LINKED_FILES = " ".join(
    f"{source}:{CONFIG_LOCAL_DIR}/{name}"
    for source, name in (
        (f"{FILE_REALM_MOUNT_DIR}/users", "users"),
        (f"{FILE_REALM_MOUNT_DIR}/roles.yml", "roles.yml"),
        (f"{FILE_REALM_MOUNT_DIR}/users_roles", "users_roles"),
        (f"{CONFIG_MOUNT_DIR}/elasticsearch.yml", "elasticsearch.yml"),
        (f"{UNICAST_HOSTS_MOUNT_DIR}/unicast_hosts.txt", "unicast_hosts.txt"),
        (f"{FILE_REALM_MOUNT_DIR}/service_tokens", "service_tokens"),
    )
)

# ECK's steps, in its order: refuse an image that is not the default distribution; copy the
# image's config, plugins and bin into the emptyDirs the node mounts in their place (the node's
# root filesystem is read-only, and plugins installed by a user's init container land there);
# link the operator's files into the config copy; hand the data and logs volumes to the node's
# user when running as root (otherwise fsGroup does it); wait until this Pod's transport
# certificate is in its volume, so the node never starts without one. Every step can run again
# after a failure (the kubelet retries init containers).
PREPARE_FS_SCRIPT = f"""#!/usr/bin/env bash
set -eu

elapsed() {{ echo $(( $(date +%s) - $1 )); }}
began=$(date +%s)

license={IMAGE_HOME}/LICENSE.txt
if [[ ! -f $license ]] || [[ $(grep -Exc "ELASTIC LICENSE AGREEMENT|Elastic License 2.0" $license) -ne 1 ]]; then
  echo "unsupported_distribution: only the default Elasticsearch distribution runs here" >&2
  exit {UNSUPPORTED_DISTRIBUTION_EXIT}
fi
echo "Preparing the filesystem"

step=$(date +%s)
for pair in {_SHARED_DIRS}; do
  image_dir=${{pair%%:*}}
  local_dir=${{pair#*:}}
  if [[ -z "$(ls -A "$image_dir")" ]]; then
    echo "$image_dir is empty"
    continue
  fi
  echo "Copying $image_dir to $local_dir"
  # -f: a retried run overwrites what an earlier one copied.
  cp -af "$image_dir"/. "$local_dir"/
done
echo "Copied in $(elapsed "$step") s"

step=$(date +%s)
for pair in {_LINKED_FILES}; do
  echo "Linking ${{pair#*:}} to ${{pair%%:*}}"
  ln -sf "${{pair%%:*}}" "${{pair#*:}}"
done
echo "Linked in $(elapsed "$step") s"

if [[ $EUID -eq 0 ]]; then
  for dir in {DATA_DIR} {LOGS_DIR}; do
    echo "Handing $dir to elasticsearch:elasticsearch"
    chown elasticsearch:elasticsearch "$dir"
  done
fi

key={INIT_TRANSPORT_CERTS_DIR}/${{POD_NAME}}.tls.key
disabled={INIT_TRANSPORT_CERTS_DIR}/transport.certs.disabled
echo "Waiting for $key (or $disabled)"
step=$(date +%s)
until [[ -f $key || -f $disabled ]]; do
  sleep 0.2
done
echo "Waited $(elapsed "$step") s for the transport certificate"
if [[ -f $disabled ]]; then
  echo "The operator issues no transport certificate (selfSignedCerts disabled)"
fi

echo "Filesystem prepared in $(elapsed "$began") s"
"""

READINESS_PORT_SCRIPT = f"""#!/usr/bin/env bash
# Elasticsearch >= 8.2 opens the readiness port once it has joined a cluster with a master.
if ! exec 3<>/dev/tcp/127.0.0.1/{READINESS_PORT}; then
  echo "Elasticsearch is not ready yet: see its log"
  exit 1
fi
"""

#: ECK's key for the probe of versions without a readiness port (< 8.2).
READINESS_PROBE_SCRIPT_KEY = "readiness-probe-script.sh"
READINESS_PORT_SCRIPT_KEY = "readiness-port-script.sh"
PRE_STOP_SCRIPT_KEY = "pre-stop-hook-script.sh"
PREPARE_FS_SCRIPT_KEY = "prepare-fs.sh"

READINESS_PROBE_SCRIPT = f"""#!/usr/bin/env bash
# Elasticsearch < 8.2 has no readiness port: ask its HTTP API, as the probe user, whether it answers.
fail() {{
  echo "{{\\"timestamp\\": \\"$(date --iso-8601=seconds)\\", \\"message\\": \\"readiness probe failed\\", $1}}" \\
    | tee /proc/1/fd/2 2>/dev/null
  exit 1
}}

version=""
if [[ -f {DOWNWARD_API_MOUNT_DIR}/labels ]]; then
  version=$(grep "{ES_VERSION_LABEL}" {DOWNWARD_API_MOUNT_DIR}/labels | cut -d '=' -f 2 | tr -d '"')
fi
password_file="${{PROBE_PASSWORD_PATH:-${{PROBE_PASSWORD_FILE:-}}}}"
auth=()
if [[ -n "${{PROBE_USERNAME:-}}" && -f "$password_file" ]]; then
  auth=(-u "${{PROBE_USERNAME}}:$(<"$password_file")")
fi
loopback=127.0.0.1
if [[ ${{POD_IP:-}} == *:* ]]; then
  loopback="[::1]"
fi
status=$(curl -o /dev/null -w "%{{http_code}}" --max-time "${{READINESS_PROBE_TIMEOUT:-3}}" \\
  -H "X-Elastic-Product-Origin: cloud" -g -s -k "${{auth[@]}}" \\
  "${{READINESS_PROBE_PROTOCOL:-https}}://$loopback:{HTTP_PORT}/")
code=$?
if [[ $code -ne 0 ]]; then
  fail "\\"curl_rc\\": \\"$code\\""
fi
if [[ $status == 200 ]]; then
  exit 0
fi
fail "\\"status\\": \\"$status\\", \\"version\\": \\"$version\\""
"""

# The pre-stop hook of the Elasticsearch container, ECK's behaviour in our words. It tells the node
# it is about to restart (the node shutdown API, type "restart", when the version has it), waits
# until Elasticsearch reports the shutdown complete, then still waits until
# PRE_STOP_ADDITIONAL_WAIT_SECONDS (default 50) have passed since the hook began, so the Pod leaves
# the Services' endpoints before the node stops. A shutdown the operator registered itself is left
# to the operator. Any failure ends in the same delayed exit: the hook never blocks a deletion for
# long. The cluster is reached through its internal HTTP Service, named from the Pod's labels.
PRE_STOP_SCRIPT = f"""#!/usr/bin/env bash
set -uo pipefail

PRE_STOP_ADDITIONAL_WAIT_SECONDS=${{PRE_STOP_ADDITIONAL_WAIT_SECONDS:=50}}
# Only "restart" is safe: "remove" would move every shard off the node within the grace period.
shutdown_type=${{PRE_STOP_SHUTDOWN_TYPE:=restart}}
max_dns_errors=${{PRE_STOP_MAX_DNS_ERRORS:=2}}
dns_errors=0
# 0+1+2+4+8+16+32+64 s of back-off stays within the default 180 s grace period.
attempts=8
began=$(date +%s)
body=$(mktemp)
trap 'rm -f "$body"' EXIT

log() {{
  echo "{{\\"@timestamp\\": \\"$(date --iso-8601=seconds)\\", \\"message\\": \\"$*\\", \\"ecs.version\\": \\"1.2.0\\", \\"event.dataset\\": \\"elasticsearch.pre-stop-hook\\"}}" \\
    | tee /proc/1/fd/2 2>/dev/null
}}

# Exit once PRE_STOP_ADDITIONAL_WAIT_SECONDS have passed since the hook began.
delayed_exit() {{
  local left=$(( PRE_STOP_ADDITIONAL_WAIT_SECONDS - ($(date +%s) - began) ))
  if (( left > 0 )); then
    log "delaying termination for $left seconds"
    sleep "$left"
  fi
  exit "${{1:-0}}"
}}

give_up() {{
  log "$*"
  delayed_exit 1
}}

# A 2xx answer is success; curl's exit code 6 (the name does not resolve, as when the whole
# cluster and its Services are being deleted) is counted apart, to give up early.
request() {{
  local status code
  status=$(curl -k -sS -o "$body" -w "%{{http_code}}" "$@")
  code=$?
  if [[ $code -ne 0 || $status -lt 200 || $status -gt 299 ]]; then
    if [[ $code -eq 6 ]]; then dns_errors=$((dns_errors + 1)); fi
    if [[ $code -eq 0 ]]; then code=1; fi
    log "$status $3"
    return $code
  fi
  dns_errors=0
  return 0
}}

retry() {{
  local count=0 code
  until "$@"; do
    code=$?
    if (( dns_errors > max_dns_errors )); then
      give_up "too many DNS errors, giving up"
    fi
    count=$((count + 1))
    if (( count >= attempts )); then
      log "attempt $count/$attempts exited $code, giving up"
      return $code
    fi
    log "attempt $count/$attempts exited $code, retrying in $((2 ** (count - 1))) seconds"
    sleep $((2 ** (count - 1)))
  done
}}

# The node shutdown API exists from 7.15.2 on.
has_shutdown_api() {{
  local major minor patch rest
  IFS=. read -r major minor rest <<<"${{1#[vV]}}"
  patch=${{rest%%[!0-9]*}}
  [[ -n ${{major:-}} && -n ${{minor:-}} ]] || return 1
  (( major > 7 || (major == 7 && (minor > 15 || (minor == 15 && ${{patch:-0}} >= 2))) ))
}}

labels={DOWNWARD_API_MOUNT_DIR}/labels
label() {{
  grep "^$1=" "$labels" 2>/dev/null | cut -d '=' -f 2- | tr -d '"'
}}
if ! has_shutdown_api "$(label {ES_VERSION_LABEL})"; then
  delayed_exit
fi

password_file={PROBE_USER_MOUNT_DIR}/{PRE_STOP_USER}
if [[ ! -f $password_file ]]; then
  log "no credentials for the node shutdown API"
  delayed_exit
fi
auth=(-u "{PRE_STOP_USER}:$(<"$password_file")")
client_cert=()
if [[ -f {HTTP_CERTS_DIR}/tls.crt ]]; then
  client_cert=(--cert {HTTP_CERTS_DIR}/tls.crt --key {HTTP_CERTS_DIR}/tls.key)
fi
url="${{READINESS_PROBE_PROTOCOL:-https}}://$(label {ES_CLUSTER_NAME_LABEL})-es-internal-http.${{NAMESPACE}}.svc:{HTTP_PORT}"

log "retrieving node ID"
if ! retry request -X GET "$url/_cat/nodes?full_id=true&h=id,name" "${{auth[@]}}" "${{client_cert[@]}}"; then
  give_up "failed to retrieve nodes"
fi
if ! node_id=$(grep -w -- "${{POD_NAME}}" "$body" | cut -f 1 -d ' ') || [[ -z $node_id ]]; then
  give_up "failed to extract node id"
fi

if ! request -X GET "$url/_nodes/$node_id/shutdown" "${{auth[@]}}" "${{client_cert[@]}}"; then
  give_up "failed to retrieve shutdown status"
fi
if grep -q -v '"nodes":\\[\\]' "$body"; then
  log "shutdown managed by the operator"
  delayed_exit
fi

log "initiating node shutdown"
if ! retry request -X PUT "$url/_nodes/$node_id/shutdown" "${{auth[@]}}" "${{client_cert[@]}}" \\
  -H 'Content-Type: application/json' \\
  -d "{{\\"type\\": \\"$shutdown_type\\", \\"reason\\": \\"pre-stop hook\\"}}"; then
  give_up "failed to call node shutdown API"
fi

until request -X GET "$url/_nodes/$node_id/shutdown" "${{auth[@]}}" "${{client_cert[@]}}" \\
  && grep -q -v 'IN_PROGRESS\\|STALLED' "$body"; do
  log "waiting for node shutdown to complete"
  sleep 10
done
delayed_exit
"""

# The init container loops while the Pod's own name is a whole line of the file, so a suspended
# Pod runs only its init containers (and can be exec'd into). The file is a ConfigMap key: the
# kubelet refreshes it in the running Pod, so removing the name lets the loop end without a
# restart. Fixed-string matching (-F): a Pod name's dots are no regex wildcards. A missing file
# (a ConfigMap written before the key existed) suspends nothing.
SUSPEND_SCRIPT = f"""#!/usr/bin/env bash
set -eu
pod="${{POD_NAME:-${{HOSTNAME:-}}}}"
while [[ -n $pod ]] && grep -Fxq -- "$pod" {SCRIPTS_MOUNT_DIR}/{SUSPENDED_PODS_KEY} 2>/dev/null; do
  echo "Pod suspended via {SUSPEND_ANNOTATION} annotation"
  sleep 10
done
"""


def suspended_pods_file(suspended: Iterable[str]) -> str:
    """The ``suspended_pods.txt`` content: the names sorted, one per line (ECK's rendering)."""
    return "\n".join(sorted(set(suspended)))


def scripts_data(suspended: Iterable[str] = ()) -> dict[str, str]:
    """Return the scripts ConfigMap's data; ``suspended`` names the Pods to hold in their init
    containers (the ``eck.k8s.elastic.co/suspend`` annotation)."""
    return {
        PRE_STOP_SCRIPT_KEY: PRE_STOP_SCRIPT,
        PREPARE_FS_SCRIPT_KEY: PREPARE_FS_SCRIPT,
        READINESS_PORT_SCRIPT_KEY: READINESS_PORT_SCRIPT,
        READINESS_PROBE_SCRIPT_KEY: READINESS_PROBE_SCRIPT,
        SUSPEND_SCRIPT_KEY: SUSPEND_SCRIPT,
        SUSPENDED_PODS_KEY: suspended_pods_file(suspended),
    }
