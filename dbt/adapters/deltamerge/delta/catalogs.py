"""The Iceberg REST catalogs one configuration names, by name, and a client for each.

A profile may name Iceberg REST catalogs (``iceberg_catalogs``: a name → the REST spec's client
properties, as pyiceberg and Iceberg's Java client spell them: ``uri``, ``warehouse``, ``prefix``,
``credential`` (OAuth2 client credentials ``id:secret``), ``token``, ``scope``,
``oauth2-server-uri``, ``header.*``; and ours, ``request-timeout``: seconds a request may take,
``REQUEST_TIMEOUT`` unless set, for pyiceberg's client waits forever on a catalog that accepts and
never answers). A UniForm table registered in one is kept current there after
each commit (``uniform.catalog``). ``Stores.catalogs`` holds the invocation's (as its object stores'
clients): a client is made on first use and kept; ``configure`` drops those made with other
properties. Secrets never leave here as text: ``redacted`` masks them in any message.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

# Properties whose values are secrets: masked wherever a message could show them.
SECRET_PROPERTIES = ("credential", "token", "client-secret", "s3.secret-access-key", "s3.session-token")
MASK = "****"
TIMEOUT_PROPERTY = "request-timeout"
REQUEST_TIMEOUT = 60.0


class UnknownCatalogError(KeyError):
    """A table or model names an Iceberg catalog the configuration does not."""


class IcebergCatalogs:
    """The Iceberg REST catalogs a configuration names (see the module's docstring)."""

    def __init__(self, configs: Mapping[str, Mapping[str, str]] | None = None) -> None:
        self._configs: dict[str, dict[str, str]] = {}
        self._clients: dict[str, Any] = {}
        self._lock = threading.Lock()
        self.configure(configs or {})

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled as its properties (a location sent to a Spark task): clients made again there."""
        return (IcebergCatalogs, (self._configs,))

    def configure(self, configs: Mapping[str, Mapping[str, str]]) -> None:
        """Name these catalogs from now on; a client made with other properties is dropped."""
        with self._lock:
            new = {name: {str(k): str(v) for k, v in props.items()} for name, props in configs.items()}
            for name in list(self._clients):
                if new.get(name) != self._configs.get(name):
                    del self._clients[name]
            self._configs = new

    @property
    def names(self) -> list[str]:
        """The catalogs' names, sorted."""
        return sorted(self._configs)

    def __contains__(self, name: object) -> bool:
        return name in self._configs

    def client(self, name: str) -> Any:
        """pyiceberg's REST catalog client for ``name`` (made on first use: it asks the server's
        ``/v1/config``, and for a token when the properties give client credentials)."""
        with self._lock:
            found = self._clients.get(name)
            if found is not None:
                return found
            if name not in self._configs:
                known = ", ".join(sorted(self._configs)) or "none"
                raise UnknownCatalogError(
                    f"no Iceberg catalog `{name}` is named in the profile (named: {known})"
                )
            properties = dict(self._configs[name])
        timeout = float(properties.pop(TIMEOUT_PROPERTY, REQUEST_TIMEOUT))
        made = _time_limited_catalog(name, properties, timeout)
        with self._lock:
            return self._clients.setdefault(name, made)

    def redacted(self, text: str) -> str:
        """``text`` with every secret of every catalog masked.

        >>> lake = IcebergCatalogs({"lake": {"uri": "http://c", "credential": "me:s3cr3t"}})
        >>> lake.redacted("bad me:s3cr3t"), lake.redacted("bad s3cr3t")
        ('bad ****', 'bad ****')
        """
        for props in self._configs.values():
            for key in SECRET_PROPERTIES:
                secret = props.get(key)
                if secret:
                    text = text.replace(secret, MASK)
                    if ":" in secret:  # an OAuth2 client's secret part alone
                        text = text.replace(secret.split(":", 1)[1], MASK)
        return text


def _time_limited_catalog(name: str, properties: dict[str, str], seconds: float) -> Any:
    """pyiceberg's REST catalog client whose every request (its first, ``/v1/config``, included) is
    given up after ``seconds`` unless it asks for its own limit: a hung catalog fails the publish
    (told as the catalog behind); it does not hang the run after its Delta commit. pyiceberg 0.12
    sets no timeout on its ``requests`` session: ours is mounted on it as it is made."""
    from pyiceberg.catalog.rest import RestCatalog
    from requests import Session
    from requests.adapters import HTTPAdapter

    class TimeLimited(HTTPAdapter):
        def send(self, request: Any, *args: Any, **kwargs: Any) -> Any:
            if kwargs.get("timeout") is None:
                kwargs["timeout"] = seconds
            return super().send(request, *args, **kwargs)

    class TimeLimitedCatalog(RestCatalog):
        def _create_session(self) -> Session:
            session = super()._create_session()
            for prefix in ("http://", "https://"):
                session.mount(prefix, TimeLimited())
            return session

    return TimeLimitedCatalog(name, **properties)
