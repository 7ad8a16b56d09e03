"""mutmut's command line with two changes that make a run shorter and change no verdict:

1. One mutant per string literal (``"XX" + s + "XX"``) instead of three (that one, and the
   literal in lower and in upper case): a changed string is caught or not by the same tests
   whatever the change, and the case variants tripled the run time of the message-heavy
   modules. Every other operator is mutmut's own.
2. A mutant's tests run fastest first. mutmut runs them with ``-x`` (a mutant is killed by its
   first failing test) in the order of a set; ordered by the call times its stats run
   recorded, grouped by test file (a file's module fixtures are set up once) and the files
   fastest first, a killed mutant costs its quickest killing test rather than whatever test
   the set's order put first. The same tests run, so a survivor is a survivor either way.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any

from mutate import fastest_first  # beside this file
from mutmut.mutation import mutators
from mutmut.state import state
from mutmut.workers import isolation

_ORIGINAL = mutators.operator_string


def operator_string(node: Any) -> Iterator[Any]:
    """The first of mutmut's string mutants only."""
    for mutated in _ORIGINAL(node):
        yield mutated
        return


mutators.mutation_operators[:] = [
    (kind, operator_string if operator is _ORIGINAL else operator)
    for kind, operator in mutators.mutation_operators
]


def _ordered(submit: Any) -> Any:
    def submit_fastest_first(self: Any, mutant_name: str, tests: list[str], *args: Any) -> None:
        submit(self, mutant_name, fastest_first(list(tests), state().duration_by_test), *args)

    return submit_fastest_first


for _runner in (isolation.ForkServerRunner, isolation.ForkRunner):
    _runner.submit = _ordered(_runner.submit)  # type: ignore[method-assign]

if __name__ == "__main__":
    from mutmut.__main__ import cli

    sys.argv[0] = "mutmut"
    cli()
