"""Dataset -> file writers, one module per format: the mirror of ``assemble/`` (file -> Dataset)."""
