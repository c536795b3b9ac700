"""Shim of Pillow (no image content is rendered here)."""
