"""``python -m xarray_tensogram``: the main job on the bundled samples, or a subcommand."""

import sys

from .cli import main

sys.exit(main())
