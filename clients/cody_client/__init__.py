"""Cody clients: the `cody-client` terminal front end and the Python client library."""
