"""The start-up folder `python3 -m npumem.torch run` puts on its children's PYTHONPATH."""
