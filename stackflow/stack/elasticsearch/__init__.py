"""The Elasticsearch controller's pure parts: children builder, status, references, validation."""

from __future__ import annotations

from stackflow.stack.elasticsearch.builder import desired_children
from stackflow.stack.elasticsearch.references import ReferencedObject, referenced_objects
from stackflow.stack.elasticsearch.status import StatusDecision, compute_status, invalid_status
from stackflow.stack.elasticsearch.tls import MissingReferenceError
from stackflow.stack.elasticsearch.validation import FieldError, validate_elasticsearch

__all__ = [
    "FieldError",
    "MissingReferenceError",
    "ReferencedObject",
    "StatusDecision",
    "compute_status",
    "desired_children",
    "invalid_status",
    "referenced_objects",
    "validate_elasticsearch",
]
