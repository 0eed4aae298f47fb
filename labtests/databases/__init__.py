"""Databases: MariaDB, PostgreSQL's pg_test_fsync and XFS on every declared disk, as cross-checks of
the rules engine and redo-writer (test_cross_checks, docs/cross-checks.md).
"""
