"""Pydantic models of ECK's custom resources and the CRDs generated from them.

ECK-compatible: same groups, versions, kinds and camelCase field names; unknown fields are accepted and
written back unchanged. Modules: ``base`` (the model base, ``from_object``/``to_object``, errors),
``common`` (shared building blocks), one module per kind, ``kinds`` (the kind table), ``schema``
(model → structural OpenAPI schema), and ``crds`` (CRD manifests; ``stackflow crds`` lives in ``stackflow.cli.crds``).
Imports only pydantic, the stdlib and (in ``crds``) PyYAML.
"""

from __future__ import annotations

from stackflow.api.agent import Agent
from stackflow.api.apm import ApmServer
from stackflow.api.autoops import AutoOpsAgentPolicy
from stackflow.api.autoscaler import ElasticsearchAutoscaler
from stackflow.api.base import CustomResource, InvalidResourceError
from stackflow.api.beat import Beat
from stackflow.api.elasticsearch import Elasticsearch
from stackflow.api.enterprisesearch import EnterpriseSearch
from stackflow.api.kibana import Kibana
from stackflow.api.kinds import KINDS, KindInfo, kind_for_object, kind_info, parse_object
from stackflow.api.logstash import Logstash
from stackflow.api.maps import ElasticMapsServer
from stackflow.api.packageregistry import PackageRegistry
from stackflow.api.stackconfigpolicy import StackConfigPolicy

__all__ = [
    "KINDS",
    "Agent",
    "ApmServer",
    "AutoOpsAgentPolicy",
    "Beat",
    "CustomResource",
    "ElasticMapsServer",
    "Elasticsearch",
    "ElasticsearchAutoscaler",
    "EnterpriseSearch",
    "InvalidResourceError",
    "Kibana",
    "KindInfo",
    "Logstash",
    "PackageRegistry",
    "StackConfigPolicy",
    "kind_for_object",
    "kind_info",
    "parse_object",
]
