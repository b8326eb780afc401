"""The package's layout rules, checked from the source (``make lint``; ``tests/unit/test_layout.py``).

1. The package root holds what dbt calls: at most ``ROOT_LIMIT`` modules. Every other concern is
   a folder.
2. No import cycle between folders and root modules (every import counts, also one inside a
   function), and none between modules, the benchmarks', tests' and tools' included.
3. Each folder imports only the folders below it (``MAY_IMPORT``): the Delta table layer only
   itself and ``common``; data skipping takes keys and predicates, never a merge's clause set
   (it does not import ``merge``); the engine (``common``, ``delta``, ``skipping``, ``merge``,
   ``cdc``, ``statements``) imports no dbt.
4. Modules at most ``MODULE_LIMIT`` lines, functions at most ``FUNCTION_LIMIT`` lines and
   ``PARAMETER_LIMIT`` parameters.
5. One module map, ``docs/architecture.md``'s: it names every module and no module that is gone;
   no other document (README, ``docs/``) keeps a map of its own.
6. The Delta layer stands in rooms (``DELTA_ROOMS``, bottom first), each importing only itself and
   the rooms below it; the log's and the commit path's rooms (and the bottom) import nothing of
   pyspark but ``pyspark.sql.types``: they run no Spark job, so a commit can be retried, and
   tested, without a Spark session. The statements' parsers (``statements/parse``) import no
   pyspark at all and no runner (``statements/run``).
7. A folder with a public face (``FACES``: its ``__init__`` re-exports what others use) is imported
   by that face only: no module of another folder, no functional test, benchmark, example or tool
   names an inner module (a test may still import a module as a whole to patch it; unit tests,
   which mirror the tree, import the module they test).

8. No module-level state outside ``spark/process.ProcessState`` (the process's) and
   ``invocation.Invocation`` (one dbt invocation's): a module-level object made by calling a class
   with no arguments (``NAME = Class()``, ``threading.local()``) or an empty container is allowed
   only where ``MODULE_STATE`` names it with its reason (stateless values, thread-locals).
9. Where the layout is moving, counts only fall: ``table_path: str`` in the package's signatures
   and fields (a table's handle is its ``TableLocation``; ``delta_table_path``, a field of dbt's
   adapter response, is output text), a union of a path and a location (``TableLocation | str``),
   ``on_object_store(`` outside ``delta/stores.py`` (the store is chosen once), and a location
   made without the stores that reach it (``TableLocation.of(path)``: the environment's, not the
   invocation's) at most ``RATCHETS`` says.
10. The Delta layer has a face per room (``delta.log``, ``delta.txn``, ``delta.data``,
   ``delta.commands``) beside its top face (``delta``: a table's location, its latest version, the
   errors, the ``storage`` module); a folder of the package uses only the faces ``DELTA_FACES``
   gives it: data skipping reads a version's files and nothing else, the catalog binding, a merge
   and CDC apply run no command, the statements' parsers touch no table. Only the catalog binding
   (``STORAGE_USERS``) calls ``delta/storage.py``, the path functions for folders that are no
   table's: a table's storage calls are its location's store's.

Run ``python tools/lint_layout.py``: it prints each broken rule with the place and exits 1.
"""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "dbt" / "adapters" / "deltamerge"
PREFIX = "dbt.adapters.deltamerge"
ROOT_LIMIT = 14
MODULE_LIMIT = 400
FUNCTION_LIMIT = 80
PARAMETER_LIMIT = 8
# What each folder may import of the package besides itself ("root" = the root modules named).
MAY_IMPORT: dict[str, set[str]] = {
    "common": set(),
    "delta": {"common", "__version__"},
    "skipping": {"delta", "common"},
    "merge": {"skipping", "delta", "common"},
    "cdc": {"merge", "skipping", "delta", "common"},
    "statements": {"merge", "skipping", "delta", "common", "binding"},
    "spark": {"common"},
    "binding": {"delta", "common", "spark"},
    "model": {"cdc", "merge", "skipping", "delta", "common", "binding", "errors", "spark"},
}
# Folders that must not import dbt (the engine: it knows nothing of dbt).
NO_DBT = {"common", "delta", "skipping", "merge", "cdc", "statements"}
# The Delta layer's rooms, bottom first ("" = the modules directly in delta/).
DELTA_ROOMS = ["", "log", "uniform", "txn", "data", "commands"]
# Rooms that run no Spark job: of pyspark they import only its type values.
NO_SPARK_ROOMS = {"", "log", "uniform", "txn"}
# Folders whose callers import the folder's face (its __init__) only.
FACES = {"delta", "binding", "merge"}
# The Delta layer's room faces (rule 10), beside its top face, ``delta``.
ROOM_FACES = {"log", "uniform", "txn", "data", "commands"}
ALL_FACES = {"delta", *ROOM_FACES}
# Who may call ``delta/storage.py`` (rule 10): its folders under the warehouse are no table's.
STORAGE_USERS = {"binding", "delta.storage", "delta.stores"}
# Which of the Delta layer's faces each folder (or root module) may import (rule 10).
DELTA_FACES: dict[str, set[str]] = {
    "skipping": {"delta"},
    "binding": {"delta", "log", "txn", "data"},
    "merge": {"delta", "log", "txn", "data"},
    "cdc": {"delta", "log", "txn", "data"},
    "statements.parse": set(),
    "statements.run": ALL_FACES,
    "model": ALL_FACES,
    "impl": {"delta", "log", "txn"},
    "operations": {"delta", "commands", "uniform"},
    "connections": {"delta"},
    "docs_catalog": {"delta"},
    "invocation": {"delta"},
    "errors": {"delta"},
}
# Module-level objects allowed (rule 8), by module, each with why it is not state to move.
MODULE_STATE: dict[str, dict[str, str]] = {
    "spark/process.py": {"PROCESS": "the process's state, the one place for it"},
    "common/sql.py": {"_FALLBACK_FILTER": "a stateless logging filter"},
    "delta/log/definition.py": {"NO_CHANGE": "an immutable value"},
    "delta/stores.py": {"LOCAL": "a stateless store (the local disk; object stores are an invocation's)"},
    "delta/txn/stamps.py": {"NO_STAMPS": "an immutable value"},
    "merge/refusals.py": {"_SPARK": "sqlglot's dialect, stateless"},
    "merge/scope.py": {"_SPARK": "sqlglot's dialect, stateless"},
    "statements/parse/text.py": {"SPARK": "sqlglot's dialect, stateless"},
    "delta/ledger.py": {"_OPEN": "per thread: the ledgers a thread's block opened"},
    "docs_catalog.py": {"_HELD": "per thread: the snapshot a catalog thread holds"},
    "spark/progress.py": {"_THREAD": "per thread: what the thread works on"},
    "common/cancel.py": {
        "_CANCELLED": "marks on threads (weak: gone with them), below ProcessState's layer",
        "_LOCK": "guards _CANCELLED",
    },
    "binding/delta_catalog.py": {"_SESSIONS": "a memo per Spark session (weak: gone with it)"},
}
# Counts that may only fall (rule 9): lower them as the code moves, never raise them.
RATCHETS = {
    "table_path: str": 0,
    "TableLocation | str": 0,
    "on_object_store(": 1,
    "a TableLocation made without its stores": 0,
}
# A location made from one argument (``TableLocation.of(path)``): reached through the environment's
# stores, not the invocation's (doctests aside).
_WITHOUT_STORES = re.compile(
    r"^(?!\s*>>>).*\bTableLocation(\.of)?\((?!path=)[^,()]*(\([^()]*\))?[^,()]*\)", re.M
)
# Folders of the tree outside the package whose modules may not import each other in a circle.
OUTSIDE = ("benchmarks", "tests", "tools")
# Where callers live besides the package (unit tests excepted: they mirror the tree).
CALLERS = ["tests/functional", "tests", "benchmarks", "examples", "tools"]


def modules() -> dict[str, Path]:
    """Every module of the package by dotted name (relative to the package)."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE).with_suffix("").parts
        if parts[-1] == "__init__" and len(parts) > 1:
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def unit_of(module: str) -> str:
    """The folder a module is in, or the module itself at the root."""
    return module.split(".")[0]


def imports_of(path: Path, known: dict[str, Path]) -> Iterator[tuple[str, int]]:
    """``(module imported, line)`` for every import of the package in ``path`` (also inside functions)."""
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        for name in names:
            if name == PREFIX or not name.startswith(PREFIX + "."):
                continue
            relative = name[len(PREFIX) + 1 :]
            if relative in known:
                yield relative, node.lineno


def dbt_imports(path: Path) -> Iterator[tuple[str, int]]:
    """Imports of dbt itself (dbt-core, dbt-adapters, dbt-spark, dbt_common)."""
    for node in ast.walk(ast.parse(path.read_text())):
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        for name in names:
            if (name.startswith("dbt.") and not name.startswith(PREFIX)) or name.startswith("dbt_common"):
                yield name, node.lineno


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected groups of more than one node (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(edges.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                group.append(top)
                if top == node:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return groups


def wide_functions(path: Path) -> Iterator[tuple[str, int, int]]:
    """``(name, line, count)`` of functions taking more than ``PARAMETER_LIMIT`` parameters (``self``
    and ``cls`` aside): run settings travel as one value (``ModelRun``, ``MergeBehaviour``)."""
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            given = [a.arg for a in [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]]
            count = len(given) - (1 if given[:1] in (["self"], ["cls"]) else 0)
            if count > PARAMETER_LIMIT:
                yield node.name, node.lineno, count


def long_functions(path: Path) -> Iterator[tuple[str, int, int]]:
    """``(name, line, length)`` of functions longer than ``FUNCTION_LIMIT`` lines (docstring included)."""
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            length = (node.end_lineno or node.lineno) - start + 1
            if length > FUNCTION_LIMIT:
                yield node.name, node.lineno, length


def problems() -> list[str]:
    """Every broken rule, one sentence each."""
    found: list[str] = []
    known = modules()
    root_modules = [m for m, p in known.items() if p.parent == PACKAGE]
    if len(root_modules) > ROOT_LIMIT:
        found.append(f"rule 1: the package root has {len(root_modules)} modules (at most {ROOT_LIMIT})")
    module_edges: dict[str, set[str]] = {}
    unit_edges: dict[str, set[str]] = {}
    for module, path in known.items():
        rel = path.relative_to(ROOT)
        unit = unit_of(module)
        for imported, line in imports_of(path, known):
            target_unit = unit_of(imported)
            if imported != module and not module.startswith(imported + "."):
                module_edges.setdefault(module, set()).add(imported)
            if target_unit == unit:
                continue
            unit_edges.setdefault(unit, set()).add(target_unit)
            allowed = MAY_IMPORT.get(unit)
            if allowed is not None and target_unit not in allowed:
                found.append(f"rule 3: {rel}:{line} ({unit}/) imports {imported} ({target_unit})")
        if unit in NO_DBT:
            for name, line in dbt_imports(path):
                found.append(f"rule 3: {rel}:{line} imports {name}: the engine ({unit}/) knows no dbt")
        lines = len(path.read_text().splitlines())
        if lines > MODULE_LIMIT:
            found.append(f"rule 4: {rel} has {lines} lines (at most {MODULE_LIMIT})")
        for name, line, length in long_functions(path):
            found.append(f"rule 4: {rel}:{line} {name}() has {length} lines (at most {FUNCTION_LIMIT})")
        for name, line, count in wide_functions(path):
            found.append(
                f"rule 4: {rel}:{line} {name}() takes {count} parameters (at most {PARAMETER_LIMIT})"
            )
    for group in cycles(unit_edges):
        found.append(f"rule 2: import cycle between {' <-> '.join(group)}")
    for group in cycles(module_edges):
        found.append(f"rule 2: import cycle between modules {' <-> '.join(group)}")
    found.extend(_outside_cycles())
    found.extend(_unmapped(known))
    found.extend(_delta_rooms(known))
    found.extend(_statement_rooms(known))
    found.extend(_faces(known))
    found.extend(_delta_faces(known))
    found.extend(_module_state(known))
    found.extend(_ratchets(known))
    return found


def _module_state(known: dict[str, Path]) -> list[str]:
    """Module-level objects of state not named in ``MODULE_STATE`` (rule 8)."""
    found = []
    for path in known.values():
        rel = path.relative_to(PACKAGE).as_posix()
        allowed = MODULE_STATE.get(rel, {})
        for node in ast.parse(path.read_text()).body:
            target = node.targets[0] if isinstance(node, ast.Assign) else getattr(node, "target", None)
            value = getattr(node, "value", None)
            if isinstance(target, ast.Name) and _makes_state(value) and target.id not in allowed:
                found.append(
                    f"rule 8: {rel}:{node.lineno} keeps module-level state {target.id}: "
                    "put it on ProcessState or Invocation"
                )
    return found


def _makes_state(value: ast.expr | None) -> bool:
    """Whether ``value`` makes an object of state: an empty container, or a class called bare."""
    if isinstance(value, (ast.List, ast.Dict, ast.Set)):
        return not (value.elts if not isinstance(value, ast.Dict) else value.keys)
    if not isinstance(value, ast.Call) or value.args or value.keywords:
        return False
    name = value.func.id if isinstance(value.func, ast.Name) else getattr(value.func, "attr", "")
    return name[:1].isupper() or name.lstrip("_")[:1].isupper() or name in ("local", "set", "dict", "list")


def _ratchets(known: dict[str, Path]) -> list[str]:
    """Counts above their ratchet (rule 9)."""
    counts = dict.fromkeys(RATCHETS, 0)
    for path in known.values():
        rel = path.relative_to(PACKAGE).as_posix()
        text = path.read_text()
        counts["table_path: str"] += len(re.findall(r"\btable_path: str", text))
        counts["TableLocation | str"] += len(re.findall(r"TableLocation \| str|str \| TableLocation", text))
        if rel != "delta/stores.py":
            counts["on_object_store("] += text.count("on_object_store(")
        counts["a TableLocation made without its stores"] += len(_WITHOUT_STORES.findall(text))
    return [
        f"rule 9: {count} of `{what}` (at most {RATCHETS[what]}: the count only falls)"
        for what, count in counts.items()
        if count > RATCHETS[what]
    ]


def _outside_cycles() -> list[str]:
    """Rule 2 beyond the package: no import cycle among the modules of ``OUTSIDE`` (benchmarks,
    tests, tools), imports inside functions included."""
    edges: dict[str, set[str]] = {}
    for folder in OUTSIDE:
        for path in sorted((ROOT / folder).rglob("*.py")):
            module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            module = module.removesuffix(".__init__")
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                    names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
                elif isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                else:
                    continue
                for name in names:
                    target = ROOT.joinpath(*name.split("."))
                    if (
                        name.split(".")[0] in OUTSIDE
                        and name != module
                        and (target.with_suffix(".py").exists() or (target / "__init__.py").exists())
                    ):
                        edges.setdefault(module, set()).add(name)
    return [f"rule 2: import cycle between modules {' <-> '.join(g)}" for g in cycles(edges)]


def _room(module: str) -> str:
    """The room of a ``delta.*`` module ("" for the bottom)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 2 else ""


def _delta_rooms(known: dict[str, Path]) -> list[str]:
    """Rule 6: rooms import only rooms below them; no Spark beyond types in the low rooms."""
    found = []
    for module, path in known.items():
        if not module.startswith("delta.") or module in (f"delta.{r}" for r in DELTA_ROOMS):
            continue
        rel, room = path.relative_to(ROOT), _room(module)
        for imported, line in imports_of(path, known):
            if imported.startswith("delta.") and DELTA_ROOMS.index(_room(imported)) > DELTA_ROOMS.index(room):
                found.append(f"rule 6: {rel}:{line} ({room or 'bottom'}) imports {imported}, a room above it")
        if room in NO_SPARK_ROOMS:
            for name, line in _spark_imports(path):
                found.append(f"rule 6: {rel}:{line} imports {name}: {room or 'the bottom'} runs no Spark job")
    return found


def _statement_rooms(known: dict[str, Path]) -> list[str]:
    """Rule 6 for ``statements/``: its parsers import no pyspark at all and no runner."""
    found = []
    for module, path in known.items():
        if not module.startswith("statements.parse."):
            continue
        rel = path.relative_to(ROOT)
        for imported, line in imports_of(path, known):
            if imported.startswith("statements.run"):
                found.append(f"rule 6: {rel}:{line} imports {imported}: a parser imports no runner")
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            for name in names:
                if name.startswith("pyspark"):
                    found.append(f"rule 6: {rel}:{node.lineno} imports {name}: the parsers are pure")
    return found


def _spark_imports(path: Path) -> Iterator[tuple[str, int]]:
    """Imports of pyspark other than its type values (``pyspark.sql.types``)."""
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("pyspark") and alias.name != "pyspark.sql.types":
                    yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("pyspark"):
            if node.module == "pyspark.sql.types":
                continue
            for alias in node.names:
                if not (node.module == "pyspark.sql" and alias.name == "types"):
                    yield f"{node.module}.{alias.name}", node.lineno


def _faces(known: dict[str, Path]) -> list[str]:
    """Rule 7: callers outside a folder with a face import the face, not its inner modules."""
    found = []
    files = [(m, p) for m, p in known.items()]
    for where in CALLERS:
        folder = ROOT / where
        pattern = folder.glob("*.py") if where == "tests" else folder.rglob("*.py")
        files.extend(("", p) for p in pattern)
    for module, path in files:
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.ImportFrom) or not node.module or node.level:
                continue
            for face in FACES:
                inner = f"{PREFIX}.{face}."
                if face == "delta" and node.module.removeprefix(inner) in ROOM_FACES:
                    continue  # a room's face (rule 10)
                if node.module.startswith(inner) and unit_of(module) != face:
                    rel = path.relative_to(ROOT)
                    found.append(f"rule 7: {rel}:{node.lineno} imports {node.module}: import {PREFIX}.{face}")
    return found


def _delta_faces(known: dict[str, Path]) -> list[str]:
    """Rule 10: each folder imports only the Delta faces ``DELTA_FACES`` gives it."""
    found = []
    for module, path in known.items():
        for imported, line in imports_of(path, known):
            if (
                imported == "delta.storage"
                and unit_of(module) not in STORAGE_USERS
                and module not in STORAGE_USERS
            ):
                rel = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
                found.append(
                    f"rule 10: {rel}:{line} ({module}) calls delta/storage.py: use its table's location.store"
                )
        if unit_of(module) == "delta":
            continue
        where = ".".join(module.split(".")[:2]) if module.startswith("statements.") else unit_of(module)
        allowed = DELTA_FACES.get(where, set())
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.ImportFrom) or not node.module or node.level:
                continue
            if node.module == f"{PREFIX}.delta":
                faces = {a.name if a.name in ROOM_FACES else "delta" for a in node.names}
            elif node.module.startswith(f"{PREFIX}.delta."):
                faces = {node.module.split(".")[4]}
            else:
                continue
            for face in sorted(faces - allowed):
                rel = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
                found.append(f"rule 10: {rel}:{node.lineno} ({where}) imports the Delta face {face!r}")
    return found


# A row of a module map: ``| `delta/log/replay.py` | ...`` (or a folder's, ``| `delta/` |``).
MAP_ROW = re.compile(r"^\| `([\w/]+(?:\.py|/))` \|", re.M)


def _unmapped(known: dict[str, Path]) -> list[str]:
    """Modules the architecture doc's module map does not name, rows naming none, other maps."""
    found = []
    architecture = (ROOT / "docs" / "architecture.md").read_text()
    for path in known.values():
        rel = path.relative_to(PACKAGE).as_posix()
        if path.name == "__init__.py" and path.parent != PACKAGE:
            rel = path.parent.relative_to(PACKAGE).as_posix() + "/"
        elif path.name in ("__init__.py", "__version__.py"):
            continue
        if f"`{rel}`" not in architecture:
            found.append(f"rule 5: docs/architecture.md's module map does not name `{rel}`")
    for named in MAP_ROW.findall(architecture):
        if not (PACKAGE / named).exists() and not (ROOT / named).exists():  # the package's, or benchmarks'
            found.append(f"rule 5: docs/architecture.md's module map names `{named}`, which does not exist")
    for doc in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        if doc.name != "architecture.md" and MAP_ROW.search(doc.read_text()):
            found.append(
                f"rule 5: {doc.relative_to(ROOT)} keeps a module map: the one map is docs/architecture.md's"
            )
    return found


def main() -> int:
    found = problems()
    for problem in found:
        print(f"lint_layout: {problem}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
