"""The bottom layer: what every other layer may use - errors, safe text, the private on-disk cache."""
