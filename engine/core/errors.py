"""The handful of exception classes the engine raises; every message is built here.

Exit codes follow DESIGN.md: 1 when a check found violations, 2 for bad input.
"""

from __future__ import annotations

from collections import namedtuple


class Problem(namedtuple("Problem", "place id path message")):
    """One violation: where it is, which record, which field, and one sentence.

    place: ``formulas/memory.yaml:42`` or ``...:42:7`` ('' when unknown); id: the record id
    ('' before one is known); path: the field path (``symbols.kv_bytes.unit``); message.
    Ordered and hashable, so problems sort and deduplicate.
    """

    __slots__ = ()

    def __str__(self) -> str:
        head = " ".join(part for part in (self.place, self.id, self.path) if part)
        return f"{head}: {self.message}" if head else self.message


class AiinfraError(Exception):
    """Base class; ``exit_code`` is what the CLI returns for it."""

    exit_code = 2


class InputError(AiinfraError):
    """Bad input from the command line or the API: names the field and what was expected."""

    exit_code = 2

    def __init__(self, field: str, message: str):
        self.field = field
        self.message = message
        super().__init__(f"{field}: {message}")


class UnitError(AiinfraError):
    """A unit string or quantity string that cannot be read."""

    exit_code = 2

    def __init__(self, text: str, message: str):
        self.text = text
        self.message = message
        super().__init__(f"{text!r}: {message}")


class ExprError(AiinfraError):
    """An expression the whitelisted parser refuses.

    ``place``, ``record_id`` and ``field`` are filled in by the caller that knows them,
    so the message reads ``file:line id expr: reason``.
    """

    exit_code = 1

    def __init__(self, reason: str, place: str = "", record_id: str = "", field: str = "expr"):
        self.reason = reason
        self.place = place
        self.record_id = record_id
        self.field = field
        super().__init__(str(self.problem()))

    def problem(self) -> Problem:
        return Problem(self.place, self.record_id, self.field, self.reason)

    def located(self, place: str, record_id: str, field: str) -> ExprError:
        return ExprError(self.reason, place, record_id, field)


class KnowledgeError(AiinfraError):
    """The knowledge root has violations; carries every problem, sorted."""

    exit_code = 1

    def __init__(self, problems: list[Problem]):
        self.problems = sorted(problems)
        super().__init__(self.report())

    def report(self) -> str:
        lines = [str(p) for p in self.problems]
        n = len(self.problems)
        lines.append(f"{n} problem{'s' if n != 1 else ''} found")
        return "\n".join(lines)


class EvaluationError(AiinfraError):
    """A formula could not be evaluated for the given inputs (division by zero, domain)."""

    exit_code = 2

    def __init__(self, record_id: str, message: str):
        self.record_id = record_id
        self.message = message
        super().__init__(f"{record_id}: {message}")


class DimensionError(AiinfraError):
    """An expression whose terms do not share a dimension; names the offending term."""

    exit_code = 1

    def __init__(self, message: str):
        self.message = message
        super().__init__(message)
