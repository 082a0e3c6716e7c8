"""Assembly: format catalogs -> xarray Variables and Datasets (names, dims, coords, attrs, chunks)."""
