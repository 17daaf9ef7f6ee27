"""Cody clients: the `cody-client` terminal front end and the Python client library."""

__version__ = "0.1.0"
