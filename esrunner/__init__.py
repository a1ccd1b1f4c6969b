"""A kubelet for Elasticsearch Pods: runs them as real Elasticsearch nodes."""
