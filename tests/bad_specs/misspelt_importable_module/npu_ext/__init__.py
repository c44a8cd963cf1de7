"""A backend's own package in the project root: its fusers live in npu_ext.fusers."""
