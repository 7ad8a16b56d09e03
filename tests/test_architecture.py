"""The layers of docs/architecture.md, enforced: every import between our modules is read
from the source with :mod:`ast` (module level, inside functions, under ``TYPE_CHECKING``,
relative imports resolved, and the string constants given to ``importlib.import_module``,
``lazy_module`` and ``__import__``), and the test fails with the list of imports that

(a) go up a layer or against the order of the rooms of a layer,
(b) name a command module from anywhere but the ``gridbench`` console script,
(c) close a cycle between modules (each cycle is printed), or
(d) leave ``gridbench_core`` for another package of ours.

The checker itself is tested on small planted trees, so that a checker that sees nothing
cannot pass for a clean house.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from tests import parse_source

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("gridbench_core", "solvers", "domains", "pipeline", "gridbench")

# The roof: the Hydra apps and ``python -m`` commands of gridbench/commands/ (a module-level
# ``main``); ``gridbench.commands.main`` is the ``gridbench`` console script that dispatches to them.
COMMANDS = frozenset(
    f"gridbench.commands.{name}"
    for name in (
        "audit",
        "evaluate",
        "generate",
        "hub",
        "import_agentce",
        "release",
        "report",
        "show",
        "train",
        "verify",
        "view",
        "main",
    )
)
DISPATCHER = "gridbench.commands.main"

# Each module lives in a room (a package, a room of pipeline/, or the commands); the rooms
# stand on five floors, lowest first. A room imports itself and the rooms below it: on
# floor 2 the two rooms are siblings and do not import each other; on floor 3 a room imports
# only the rooms before it in this order; the public face does not import the commands' kit
# (the Hydra schemas of pipeline/config.py and the command wrapper of pipeline/cli.py).
FLOORS: tuple[tuple[str, ...], ...] = (
    ("gridbench_core",),
    ("solvers", "domains"),
    (
        "pipeline",
        "pipeline.forkserver_guard",
        "pipeline.parallel",
        "pipeline.generation",
        "pipeline.integrity",
        "pipeline.storage",
        "pipeline.evaluation",
        "pipeline.config",
        "pipeline.cli",
    ),
    ("gridbench",),
    ("commands",),
)
ORDERED_FLOOR = 3  # the floor whose rooms are ordered; on the others they are siblings
COMMAND_KIT = frozenset({"pipeline.config", "pipeline.cli"})
LAYERS = {room: floor for floor, rooms in enumerate(FLOORS, start=1) for room in rooms}


def _allowed(room: str) -> frozenset[str]:
    floor = LAYERS[room]
    below = {other for other, other_floor in LAYERS.items() if other_floor < floor}
    if floor == ORDERED_FLOOR:
        rooms = FLOORS[floor - 1]
        below |= set(rooms[: rooms.index(room)])
    if room == "gridbench":
        below -= COMMAND_KIT
    return frozenset(below)


ALLOWED = {room: _allowed(room) for room in LAYERS}

DYNAMIC_IMPORTERS = ("import_module", "lazy_module", "__import__")


@dataclass(frozen=True)
class Import:
    """One import of ``target`` (a module of ours) by ``source``, at ``path``:``line``."""

    source: str
    target: str
    path: Path
    line: int

    def where(self, root: Path) -> str:
        """``path:line`` relative to ``root``, for the failure messages."""
        return f"{self.path.relative_to(root)}:{self.line}"


def module_name(path: Path, root: Path) -> str:
    """``pipeline/storage/read.py`` -> ``pipeline.storage.read``; a package's ``__init__.py``
    is the package."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def find_modules(root: Path, packages: Iterable[str]) -> dict[str, Path]:
    """Every module of ``packages`` under ``root``, by dotted name."""
    found = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            found[module_name(path, root)] = path
    return found


def _resolve(name: str, modules: dict[str, Path]) -> str | None:
    """The module of ours that importing ``name`` runs last: the longest prefix of ``name``
    that is one of ``modules`` (``pipeline.generation.TaskKey`` -> ``pipeline.generation``)."""
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        candidate = ".".join(parts[:end])
        if candidate in modules:
            return candidate
    return None


def _base(module: str, is_package: bool, level: int, name: str | None) -> str:
    """The absolute name of a relative import ``from <level dots><name> import ...``."""
    package = module.split(".") if is_package else module.split(".")[:-1]
    if level > 1:
        package = package[: len(package) - (level - 1)]
    return ".".join(part for part in [*package, *([name] if name else [])] if part)


def _dynamic_name(call: ast.Call) -> str | None:
    """The module a string constant names in ``importlib.import_module("...")``,
    ``lazy_module("...")`` or ``__import__("...")``; a relative name is resolved against the
    package given beside it (``import_module(".read", "pipeline.storage")``)."""
    func = call.func
    called = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
    if called not in DYNAMIC_IMPORTERS or not call.args:
        return None
    first = call.args[0]
    if not (isinstance(first, ast.Constant) and isinstance(first.value, str)):
        return None
    name = first.value
    if not name.startswith("."):
        return name
    given = [*call.args[1:2], *(k.value for k in call.keywords if k.arg == "package")]
    if not (given and isinstance(given[0], ast.Constant) and isinstance(given[0].value, str)):
        return None
    level = len(name) - len(name.lstrip("."))
    return _base(given[0].value, True, level, name.lstrip(".") or None)


def imports_of(path: Path, module: str, modules: dict[str, Path]) -> list[Import]:
    """Every import of one of ``modules`` by the file ``path`` (the module ``module``),
    wherever it stands in the file."""
    tree = parse_source(path.read_text(), filename=str(path))
    is_package = path.name == "__init__.py"
    found: list[Import] = []

    def add(name: str | None, line: int) -> None:
        target = _resolve(name, modules) if name else None
        if target is not None and target != module:
            found.append(Import(module, target, path, line))

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(alias.name, node.lineno)
        elif isinstance(node, ast.ImportFrom):
            base = _base(module, is_package, node.level, node.module) if node.level else node.module
            for alias in node.names:
                # ``from pkg import sub`` runs ``pkg.sub`` when it is a module, else ``pkg``
                add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base, node.lineno)
        elif isinstance(node, ast.Call):
            add(_dynamic_name(node), node.lineno)
    return found


def room_of(module: str) -> str:
    """The room of ``module`` (a key of ``LAYERS``)."""
    if module in COMMANDS or module == "gridbench.commands" or module.startswith("gridbench.commands."):
        return "commands"
    parts = module.split(".")
    if parts[0] == "pipeline" and len(parts) > 1:
        return f"pipeline.{parts[1]}"
    return parts[0]


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each as one
    cycle through it, sorted: ``[a, b, c]`` reads ``a -> b -> c -> a``."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[set[str]] = []

    def visit(node: str) -> None:
        # iterative Tarjan: the graph is small, but recursion depth should not depend on it
        work = [(node, iter(sorted(edges.get(node, ()))))]
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        while work:
            current, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[current] = min(low[current], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[current])
            if low[current] == index[current]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == current:
                        break
                if len(component) > 1:
                    components.append(component)

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return sorted(_cycle_through(component, edges) for component in components)


def _cycle_through(component: set[str], edges: dict[str, set[str]]) -> list[str]:
    """One cycle through the smallest module of ``component`` (a breadth-first path back)."""
    start = min(component)
    parents: dict[str, str] = {}
    queue = [start]
    while queue:
        node = queue.pop(0)
        for child in sorted(edges.get(node, ()) & component):
            if child == start:
                path = [node]
                while path[-1] != start:
                    path.append(parents[path[-1]])
                return path[::-1]
            if child not in parents:
                parents[child] = node
                queue.append(child)
    raise AssertionError(f"no cycle through {start}")  # pragma: no cover: a component has one


def violations(root: Path, packages: Iterable[str] = PACKAGES) -> list[str]:
    """Every broken rule of the tree under ``root``, one line each (empty when the house is
    in order)."""
    modules = find_modules(root, packages)
    found: list[str] = []
    edges: dict[str, set[str]] = {module: set() for module in modules}
    homeless = sorted(module for module in modules if room_of(module) not in LAYERS)
    found += [f"{module}: in no room; give {room_of(module)} a place in FLOORS" for module in homeless]
    for module, path in modules.items():
        for imp in imports_of(path, module, modules):
            edges[module].add(imp.target)
            source, target = room_of(imp.source), room_of(imp.target)
            if source not in LAYERS or target not in LAYERS:
                continue
            line = f"{imp.where(root)}: {imp.source} ({source}) imports {imp.target} ({target})"
            if source == "gridbench_core" and target != "gridbench_core":
                found.append(f"{line}: gridbench_core imports nothing of ours (d)")
            elif target == "commands" and imp.source != DISPATCHER:
                found.append(f"{line}: nothing imports a command but the `gridbench` script (b)")
            elif LAYERS[target] > LAYERS[source]:
                found.append(f"{line}: upward, from floor {LAYERS[source]} to floor {LAYERS[target]} (a)")
            elif source != target and target not in ALLOWED[source]:
                found.append(f"{line}: {source} may import only {sorted(ALLOWED[source])} (a)")
    for cycle in cycles(edges):
        found.append("cycle (c): " + " -> ".join([*cycle, cycle[0]]))
    return found


def test_the_house_keeps_its_layers():
    found = violations(ROOT)
    assert not found, "imports against docs/architecture.md:\n" + "\n".join(found)


def test_every_room_has_a_floor_and_a_rule():
    assert set(LAYERS) == set(ALLOWED)
    for room, allowed in ALLOWED.items():
        assert all(LAYERS[other] <= LAYERS[room] for other in allowed), room
    # the allowed imports between rooms are themselves without a cycle
    assert cycles({room: set(allowed) for room, allowed in ALLOWED.items()}) == []


def test_every_module_is_in_a_room(tmp_path):
    for module in find_modules(ROOT, PACKAGES):
        assert room_of(module) in LAYERS, module
    root = _plant(tmp_path, {"pipeline/shelf.py": "import gridbench_core\n"})
    assert violations(root) == ["pipeline.shelf: in no room; give pipeline.shelf a place in FLOORS"]


def _defines_main(path: Path) -> bool:
    tree = parse_source(path.read_text())
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == "main":
            return True
        if isinstance(node, ast.Assign) and any(
            isinstance(target, ast.Name) and target.id == "main" for target in node.targets
        ):
            return True
    return False


def test_the_commands_are_the_modules_with_a_main():
    """The commands live in a room of their own, gridbench/commands/: its modules with a
    module-level ``main`` are exactly the list above, and no module of pipeline/ has one (a
    Hydra app left among the libraries would sit a floor too low, its imports of gridbench/
    running up; the servers of gridbench/ that have a ``main`` are the public face's own)."""
    found = {
        f"gridbench.commands.{path.stem}"
        for path in (ROOT / "gridbench" / "commands").glob("*.py")
        if path.stem != "__init__" and _defines_main(path)
    }
    assert found == set(COMMANDS)
    elsewhere = [
        path.relative_to(ROOT).as_posix() for path in (ROOT / "pipeline").rglob("*.py") if _defines_main(path)
    ]
    assert elsewhere == []
    assert not (ROOT / "pipeline" / "commands").exists()  # the commands left the libraries' floor


# -- the checker on planted trees -------------------------------------------------------------


def _plant(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    for package in PACKAGES:
        (root / package).mkdir(exist_ok=True)
        (root / package / "__init__.py").touch()
    return root


def test_a_clean_planted_tree_passes(tmp_path):
    root = _plant(
        tmp_path,
        {
            "gridbench_core/task.py": "import json\n",
            "solvers/ladder.py": "from gridbench_core.task import json\n",
            "pipeline/generation/__init__.py": "from . import build\n",
            "pipeline/generation/build.py": "from solvers import ladder\n",
            "gridbench/commands/release.py": "from pipeline.generation.build import x\n",
            "gridbench/api.py": "from pipeline.generation import build\n",
            "gridbench/commands/main.py": (
                "import importlib\nRELEASE = importlib.import_module('gridbench.commands.release')\n"
            ),
        },
    )
    assert violations(root) == []


def test_the_checker_catches_an_upward_import(tmp_path):
    root = _plant(
        tmp_path,
        {
            "gridbench_core/task.py": "def f():\n    from solvers import ladder\n",
            "solvers/ladder.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
            "    from gridbench.env import Episode\n",
            "domains/base.py": "import importlib\nimportlib.import_module('pipeline.generation.build')\n",
            "pipeline/generation/build.py": "from ..storage.read import x\n",
            "pipeline/storage/read.py": "from gridbench_core.lazy import lazy_module\n"
            "E = lazy_module('gridbench.env')\n",
            "gridbench/env.py": "x = __import__('gridbench.commands.verify')\n",
            "gridbench/commands/verify.py": "def main():\n    pass\n",
            "pipeline/config.py": "x = 1\n",
            "gridbench/kit.py": "from pipeline.config import x\n",
        },
    )
    floor = "from floor {} to floor {} (a)".format
    assert set(violations(root)) == {
        "gridbench_core/task.py:2: gridbench_core.task (gridbench_core) imports solvers.ladder "
        "(solvers): gridbench_core imports nothing of ours (d)",
        "solvers/ladder.py:3: solvers.ladder (solvers) imports gridbench.env (gridbench): upward, "
        + floor(2, 4),
        "domains/base.py:2: domains.base (domains) imports pipeline.generation.build "
        "(pipeline.generation): upward, " + floor(2, 3),
        "pipeline/generation/build.py:1: pipeline.generation.build (pipeline.generation) imports "
        "pipeline.storage.read (pipeline.storage): pipeline.generation may import only "
        "['domains', 'gridbench_core', 'pipeline', 'pipeline.forkserver_guard', 'pipeline.parallel', "
        "'solvers'] (a)",
        "pipeline/storage/read.py:2: pipeline.storage.read (pipeline.storage) imports gridbench.env "
        "(gridbench): upward, " + floor(3, 4),
        "gridbench/env.py:1: gridbench.env (gridbench) imports gridbench.commands.verify (commands): nothing "
        "imports a command but the `gridbench` script (b)",
        "gridbench/kit.py:1: gridbench.kit (gridbench) imports pipeline.config (pipeline.config): "
        f"gridbench may import only {sorted(ALLOWED['gridbench'])} (a)",
    }


def test_the_checker_catches_a_cycle(tmp_path):
    root = _plant(
        tmp_path,
        {
            "solvers/a.py": "import solvers.b\n",
            "solvers/b.py": "def later():\n    from . import c\n",
            "solvers/c.py": "from typing import TYPE_CHECKING\n"
            "if TYPE_CHECKING:\n    from solvers.a import A\n",
            "domains/x.py": "from domains import y\n",
            "domains/y.py": "import importlib\nimportlib.import_module('.x', 'domains')\n",
        },
    )
    found = violations(root)
    assert "cycle (c): solvers.a -> solvers.b -> solvers.c -> solvers.a" in found
    assert "cycle (c): domains.x -> domains.y -> domains.x" in found
    assert len([line for line in found if line.startswith("cycle")]) == 2


def test_the_checker_resolves_relative_imports(tmp_path):
    root = _plant(
        tmp_path,
        {
            "pipeline/storage/__init__.py": "from .read import x\n",
            "pipeline/storage/read.py": "from . import write\nfrom .. import generation\n",
            "pipeline/storage/write.py": "from .read import x\n",
            "pipeline/generation/__init__.py": "",
        },
    )
    found = violations(root)
    assert "cycle (c): pipeline.storage.read -> pipeline.storage.write -> pipeline.storage.read" in found
    assert not any("pipeline.generation" in line for line in found)
