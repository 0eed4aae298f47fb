"""Unit tests of redo-writer/ and devicemodel/ (C): redo-writer run and verify, the filter and its simulator."""
