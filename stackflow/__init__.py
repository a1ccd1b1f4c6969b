"""Stackflow: the Elastic Stack on Kubernetes from ECK's custom resources, orchestrated by Temporal."""

__version__ = "0.1.0"
