"""sectorlab: a reproducible QEMU lab for redo/transaction-log storage across disk sector geometries."""

__version__ = "0.1.0"
