"""Workloads: what is executed and what is measured."""
