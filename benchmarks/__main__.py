"""``python -m benchmarks [NAME] [options]`` from the repository root (what ``python -m minigraph bench`` runs)."""
import sys

from . import main

sys.exit(main())
