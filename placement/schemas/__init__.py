"""marshmallow schemas for request bodies, one module per noun.

A microversion that changes a body is a subclass with a comment saying which.
"""
