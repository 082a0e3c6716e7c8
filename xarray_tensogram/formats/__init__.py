"""Format readers and writers. No xarray or dask in here: a usable library of its own."""
