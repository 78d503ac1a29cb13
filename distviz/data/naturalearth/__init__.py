"""Vendored Natural Earth coastline and land shapefiles (public domain), read without any network access."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import numpy as np

from distviz._optional import missing
from distviz.data.paths import package_file
from distviz.errors import ConfigError

#: Folder to give cartopy as ``cartopy.config["pre_existing_data_dir"]`` (cartopy's own layout below it), read through
#: importlib.resources wherever distviz is installed.
DATA_DIR = package_file("distviz.data", "naturalearth")
SCALES = ("110m", "50m")
NAMES = ("coastline", "land")


def shapefile_path(name: str = "land", scale: str = "50m") -> Path:
    """Path of the vendored `ne_{scale}_{name}.shp` (name 'land' or 'coastline', scale '110m' or '50m')."""
    if name not in NAMES or scale not in SCALES:
        raise ConfigError(f"No vendored Natural Earth layer '{name}' at scale '{scale}'; use name in {NAMES} "
                          f"and scale in {SCALES}.")
    return DATA_DIR / "shapefiles" / "natural_earth" / "physical" / f"ne_{scale}_{name}.shp"


def _require_shapes() -> None:
    """Raise the extra's sentence unless shapely and pyshp (which read the shapefiles) are installed."""
    try:
        import shapefile  # noqa: F401
        import shapely  # noqa: F401
    except ModuleNotFoundError as e:
        if e.name not in ("shapefile", "shapely"):
            raise
        raise missing(e.name, "Reading the Natural Earth shapefiles") from None


@lru_cache(maxsize=16)
def geometry(name: str = "land", scale: str = "50m", bbox: tuple[float, float, float, float] | None = None):
    """The layer as one shapely geometry, clipped to bbox (lon0, lon1, lat0, lat1) when given."""
    _require_shapes()
    import shapefile
    import shapely
    from shapely.geometry import box, shape

    with shapefile.Reader(str(shapefile_path(name, scale))) as r:
        geoms = [shape(s.__geo_interface__) for s in r.shapes()]
    if bbox is not None:
        b = box(bbox[0], bbox[2], bbox[1], bbox[3])
        geoms = [g.intersection(b) for g in geoms if g.intersects(b)]
    g = shapely.union_all(geoms) if name == "land" else shapely.MultiLineString(
        [ls for g in geoms for ls in getattr(g, "geoms", [g]) if ls.geom_type == "LineString" and not ls.is_empty])
    shapely.prepare(g)
    return g


def on_land(lon, lat, scale: str = "50m", bbox=None) -> np.ndarray:
    """Boolean array: whether each (lon, lat) lies on Natural Earth land."""
    _require_shapes()
    import shapely

    return shapely.contains_xy(geometry("land", scale, None if bbox is None else tuple(bbox)),
                               np.asarray(lon, float), np.asarray(lat, float))


def lines(name: str = "coastline", scale: str = "50m", bbox=None) -> tuple[np.ndarray, np.ndarray]:
    """Coastline or land outlines as (lon, lat) arrays with NaN separating the pieces (for line plots)."""
    _require_shapes()
    import shapely

    g = geometry(name, scale, None if bbox is None else tuple(bbox))
    parts = []
    for p in getattr(g, "geoms", [g]):
        rings = [p.exterior, *p.interiors] if p.geom_type == "Polygon" else [p]
        for ring in rings:
            xy = np.asarray(shapely.get_coordinates(ring))
            if xy.size:
                parts.append(np.vstack([xy, [np.nan, np.nan]]))
    if not parts:
        return np.array([]), np.array([])
    xy = np.vstack(parts)
    return xy[:, 0], xy[:, 1]
