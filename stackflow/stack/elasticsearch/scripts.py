"""Contents of the ``<es>-es-scripts`` ConfigMap: filesystem preparation, probe and suspend scripts."""

from __future__ import annotations

from collections.abc import Iterable

from stackflow.stack.elasticsearch.config import (
    CONFIG_DIR,
    CONFIG_MOUNT_DIR,
    FILE_REALM_MOUNT_DIR,
    HTTP_PORT,
    PROBE_USER_MOUNT_DIR,
    READINESS_PORT,
    SCRIPTS_MOUNT_DIR,
    UNICAST_HOSTS_MOUNT_DIR,
)

#: ECK's keys: the suspend init container's script, and the Pods it holds back, one per line.
SUSPEND_SCRIPT_KEY = "suspend.sh"
SUSPENDED_PODS_KEY = "suspended_pods.txt"
#: The annotation listing the Pods to suspend (its name is what the suspended Pod's log says).
SUSPEND_ANNOTATION = "eck.k8s.elastic.co/suspend"

PREPARE_FS_SCRIPT = f"""#!/usr/bin/env bash
set -eu
# The image's config dir is copied into a writable emptyDir so operator files can be linked into it.
cp -a /usr/share/elasticsearch/config/. /mnt/elastic-internal/elasticsearch-config-local/ || true
ln -sf {CONFIG_MOUNT_DIR}/elasticsearch.yml /mnt/elastic-internal/elasticsearch-config-local/elasticsearch.yml
for file in users users_roles roles.yml service_tokens; do
  if [[ -f {FILE_REALM_MOUNT_DIR}/$file ]]; then
    ln -sf {FILE_REALM_MOUNT_DIR}/$file /mnt/elastic-internal/elasticsearch-config-local/$file
  fi
done
ln -sf {UNICAST_HOSTS_MOUNT_DIR}/unicast_hosts.txt /mnt/elastic-internal/elasticsearch-config-local/unicast_hosts.txt
echo "prepared {CONFIG_DIR}"
"""

READINESS_PORT_SCRIPT = f"""#!/usr/bin/env bash
# Elasticsearch >= 8.2 opens the readiness port once it has joined a cluster with a master.
exec 3<>/dev/tcp/127.0.0.1/{READINESS_PORT}
"""

LEGACY_READINESS_SCRIPT = f"""#!/usr/bin/env bash
# Elasticsearch < 8.2 has no readiness port: ask the HTTP API with the probe user.
PROBE_PASSWORD=$(cat {PROBE_USER_MOUNT_DIR}/elastic-internal-probe)
status=$(curl -o /dev/null -w '%{{http_code}}' -k -s -u "elastic-internal-probe:$PROBE_PASSWORD" \\
  "${{READINESS_PROBE_PROTOCOL:-https}}://127.0.0.1:{HTTP_PORT}/")
[[ $status == 200 ]]
"""

PRE_STOP_SCRIPT = """#!/usr/bin/env bash
# Give Kubernetes time to remove the pod from the Service endpoints before Elasticsearch stops.
sleep "${PRE_STOP_ADDITIONAL_WAIT_SECONDS:-50}"
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
        "legacy-readiness-probe-script.sh": LEGACY_READINESS_SCRIPT,
        "pre-stop-hook-script.sh": PRE_STOP_SCRIPT,
        "prepare-fs.sh": PREPARE_FS_SCRIPT,
        "readiness-port-script.sh": READINESS_PORT_SCRIPT,
        SUSPEND_SCRIPT_KEY: SUSPEND_SCRIPT,
        SUSPENDED_PODS_KEY: suspended_pods_file(suspended),
    }
