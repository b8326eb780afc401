"""Files of a table folder on a local disk or an object store, read independently of our engine.

The tests' readers of raw Delta logs (``validator``, ``functional/helpers``) take a path or an
object-store URI (``s3a://bucket/key``); a URI is read through obstore with the store's variables
from the environment (``AWS_*``, as the S3 tier sets them), not through the engine's storage layer.
"""

from __future__ import annotations

import os
import shutil
from typing import Any


def is_uri(path: str) -> bool:
    return "://" in path and not path.startswith("file://")


def join(folder: str, relative: str) -> str:
    """``relative`` under ``folder``; an absolute path or URI as it is."""
    if is_uri(relative) or relative.startswith("/"):
        return relative
    return f"{folder.rstrip('/')}/{relative}" if is_uri(folder) else os.path.join(folder, relative)


def same_place(path: str) -> str:
    """A file's identity across spellings: ``bucket/key`` of a URI (any scheme), else a normal path."""
    if is_uri(path):
        return path.split("://", 1)[1]
    return os.path.normpath(path.removeprefix("file://"))


def _store(uri: str) -> tuple[Any, str]:
    from obstore.store import from_url

    scheme, _, bucket, key = uri.split("/", 3)
    allow_http = os.environ.get("AWS_ALLOW_HTTP") == "true"
    return from_url(f"{scheme}//{bucket}", client_options={"allow_http": allow_http}), key


def read_bytes(path: str) -> bytes:
    if not is_uri(path):
        with open(path.removeprefix("file://"), "rb") as handle:
            return handle.read()
    import obstore

    store, key = _store(path)
    return bytes(obstore.get(store, key).bytes())


def read_text(path: str) -> str:
    return read_bytes(path).decode()


def size(path: str) -> int | None:
    """A file's size in bytes, None when there is none."""
    if not is_uri(path):
        return os.path.getsize(path) if os.path.isfile(path) else None
    import obstore
    from obstore.exceptions import NotFoundError

    store, key = _store(path)
    try:
        return int(obstore.head(store, key)["size"])
    except (NotFoundError, FileNotFoundError):
        return None


def list_names(folder: str) -> list[str]:
    """The names of the files directly in ``folder``."""
    if not is_uri(folder):
        return os.listdir(folder)
    import obstore

    store, key = _store(folder)
    listing = obstore.list_with_delimiter(store, prefix=key.rstrip("/") + "/")
    # S3A's marker of the folder itself (``<folder>/``) is listed as the folder's own key: no file.
    return [i["path"].rsplit("/", 1)[1] for i in listing["objects"] if i["path"] != key.rstrip("/")]


def copy_folder(source: str, target: str) -> None:
    """Every file of ``source`` copied to ``target``: local to local, local to a store, within a store."""
    if not is_uri(target):
        shutil.copytree(source, target)
        return
    import obstore

    store, target_key = _store(target)
    if not is_uri(source):
        for folder, _, names in os.walk(source):
            for name in names:
                local = os.path.join(folder, name)
                with open(local, "rb") as handle:
                    obstore.put(store, f"{target_key}/{os.path.relpath(local, source)}", handle.read())
        return
    _, source_key = _store(source)
    items = [item for batch in obstore.list(store, prefix=source_key.rstrip("/") + "/") for item in batch]
    paths = {item["path"] for item in items}
    for item in items:
        path = item["path"]
        if item["size"] == 0 and any(p.startswith(f"{path}/") for p in paths):
            continue  # S3A's marker of a folder (``<folder>/``, listed without its slash)
        obstore.copy(store, path, target_key + path[len(source_key) :])
