"""``deltamerge.<macro>`` in models: our macro package addressable by its name.

dbt-core exposes the macros of adapter plugins globally and as ``dbt.<macro>``, but not
under the plugin's own package name. Users write ``deltamerge.table_changes(...)`` to say
whose macro it is, so the namespace dbt builds gets our package added under that name.
If dbt-core's internals differ from what this expects, nothing is changed and the
global names keep working.
"""

from __future__ import annotations

from typing import Any

PACKAGE = "deltamerge"


def expose_package_namespace() -> None:
    """Wrap dbt's macro namespace builder so ``deltamerge`` names our macros (idempotent)."""
    try:
        from dbt.context.macros import MacroNamespaceBuilder
    except ImportError:
        return
    build = MacroNamespaceBuilder.build_namespace
    if getattr(build, "_deltamerge", False):
        return

    def build_namespace(self: Any, macros_by_package: Any, ctx: Any) -> Any:
        namespace = build(self, macros_by_package, ctx)
        ours = getattr(self, "internal_packages", {}).get(PACKAGE)
        packages = getattr(namespace, "packages", None)
        if ours and isinstance(packages, dict):
            packages.setdefault(PACKAGE, ours)
        return namespace

    build_namespace._deltamerge = True  # type: ignore[attr-defined]
    MacroNamespaceBuilder.build_namespace = build_namespace  # type: ignore[method-assign]
