"""Plain record classes without importing :mod:`dataclasses`.

``dataclasses`` imports :mod:`inspect` (and with it ``ast``, ``dis``, ``tokenize``): about 14 ms
before the first record class exists, which is half of a one-record command's budget over python
start. The records of this project use a small part of it (fields from annotations, defaults,
``field(default_factory=...)``, ``frozen``, ``slots``, ``replace``, ``fields``), which this module
provides with the same spelling, so a module switches by its import line alone:

    from engine.core.record import dataclass, field, replace

What is generated: ``__init__`` (fields in annotation order, bases first; defaults and factories),
``__repr__``, ``__eq__`` (same class, fields equal), ``__hash__`` for frozen records (unhashable
otherwise, as dataclasses does with ``eq=True``), assignment refused on frozen records
(:class:`FrozenInstanceError`, an AttributeError), ``__slots__`` when asked, pickling of frozen
slotted records, ``__match_args__`` and ``__dataclass_fields__``-free introspection through
:func:`fields`. Annotations stay strings (``from __future__ import annotations``); a ``ClassVar``
annotation is not a field.
"""

from __future__ import annotations

_MISSING = object()
_FIELDS = "__record_fields__"


class FrozenInstanceError(AttributeError):
    """Assignment to a field of a frozen record."""


class Field:
    __slots__ = ("name", "default", "default_factory")

    def __init__(self, default=_MISSING, default_factory=_MISSING, name: str = ""):
        if default is not _MISSING and default_factory is not _MISSING:
            raise ValueError("cannot specify both default and default_factory")
        self.name, self.default, self.default_factory = name, default, default_factory

    def __repr__(self) -> str:
        return f"Field(name={self.name!r})"


def field(*, default=_MISSING, default_factory=_MISSING) -> Field:
    return Field(default, default_factory)


def fields(obj) -> tuple[Field, ...]:
    """The fields of a record class or instance, in order."""
    try:
        return getattr(obj, _FIELDS)
    except AttributeError:
        raise TypeError("must be called with a record class or instance") from None


def is_dataclass(obj) -> bool:
    return hasattr(type(obj) if not isinstance(obj, type) else obj, _FIELDS)


def replace(obj, **changes):
    """A copy of ``obj`` with the given fields changed (like dataclasses.replace)."""
    names = {f.name for f in fields(obj)}
    unknown = set(changes) - names
    if unknown:
        raise TypeError(f"{type(obj).__name__} has no field {sorted(unknown)[0]!r}")
    values = {f.name: getattr(obj, f.name) for f in fields(obj)}
    values.update(changes)
    return type(obj)(**values)


def _own_fields(cls) -> list[Field]:
    out = []
    for name, annotation in cls.__dict__.get("__annotations__", {}).items():
        text = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", "")
        if text.startswith(("ClassVar", "typing.ClassVar")):
            continue
        value = cls.__dict__.get(name, _MISSING)
        f = value if isinstance(value, Field) else Field(default=value)
        f.name = name
        out.append(f)
    return out


def _init_source(all_fields: list[Field], frozen: bool) -> tuple[str, dict]:
    env: dict = {"_MISSING": _MISSING, "_set": object.__setattr__}
    params, body = [], []
    for i, f in enumerate(all_fields):
        if f.default_factory is not _MISSING:
            env[f"_factory{i}"] = f.default_factory
            params.append(f"{f.name}=_MISSING")
            value = f"_factory{i}() if {f.name} is _MISSING else {f.name}"
        elif f.default is not _MISSING:
            env[f"_default{i}"] = f.default
            params.append(f"{f.name}=_default{i}")
            value = f.name
        else:
            if params and "=" in params[-1]:
                raise TypeError(f"non-default argument {f.name!r} follows default argument")
            params.append(f.name)
            value = f.name
        body.append(f"_set(self, {f.name!r}, {value})" if frozen else f"self.{f.name} = {value}")
    source = f"def __init__(self, {', '.join(params)}):\n    " + ("\n    ".join(body) or "pass") + "\n"
    return source, env


def _build(cls, frozen: bool, slots: bool):
    inherited: list[Field] = []
    for base in reversed(cls.__mro__[1:]):
        for f in base.__dict__.get(_FIELDS, ()):
            inherited = [g for g in inherited if g.name != f.name] + [f]
    own = _own_fields(cls)
    own_names = {f.name for f in own}
    all_fields = [f for f in inherited if f.name not in own_names] + own
    names = tuple(f.name for f in all_fields)
    source, env = _init_source(all_fields, frozen)
    exec(source, env)  # generated from the class's own field names only, never from input text
    made = {"__init__": env["__init__"], _FIELDS: tuple(all_fields), "__match_args__": names}

    def __repr__(self):
        inner = ", ".join(f"{n}={getattr(self, n)!r}" for n in names)
        return f"{type(self).__qualname__}({inner})"

    def __eq__(self, other):
        if other.__class__ is not self.__class__:
            return NotImplemented
        return tuple(getattr(self, n) for n in names) == tuple(getattr(other, n) for n in names)

    own_dict = cls.__dict__
    if "__repr__" not in own_dict:
        made["__repr__"] = __repr__
    if "__eq__" not in own_dict:
        made["__eq__"] = __eq__
    explicit_hash = own_dict.get("__hash__", None) is not None
    if frozen:
        def __hash__(self):
            return hash(tuple(getattr(self, n) for n in names))

        def __setattr__(self, name, value):
            raise FrozenInstanceError(f"cannot assign to field {name!r}")

        def __delattr__(self, name):
            raise FrozenInstanceError(f"cannot delete field {name!r}")

        def __getstate__(self):
            return tuple(getattr(self, n) for n in names)

        def __setstate__(self, state):
            for n, v in zip(names, state, strict=True):
                object.__setattr__(self, n, v)

        if not explicit_hash:
            made["__hash__"] = __hash__
        made.update(__setattr__=__setattr__, __delattr__=__delattr__, __getstate__=__getstate__, __setstate__=__setstate__)
    elif not explicit_hash:
        made["__hash__"] = None
    for fn_name, fn in made.items():
        if callable(fn) and hasattr(fn, "__qualname__"):
            fn.__qualname__ = f"{cls.__qualname__}.{fn_name}"
    if not slots:  # the class itself, as dataclasses does (methods keep their __class__ cell)
        for f in own:
            if isinstance(own_dict.get(f.name), Field):
                delattr(cls, f.name)
        for key, value in made.items():
            setattr(cls, key, value)
        return cls
    namespace = dict(own_dict)
    for f in own:  # class attributes that were defaults would shadow the slots
        namespace.pop(f.name, None)
    namespace.pop("__dict__", None)
    namespace.pop("__weakref__", None)
    namespace["__slots__"] = tuple(f.name for f in own)
    namespace.update(made)
    new = type(cls)(cls.__name__, cls.__bases__, namespace)
    new.__qualname__ = cls.__qualname__
    return new


def dataclass(cls=None, /, *, frozen: bool = False, slots: bool = False):
    """``@dataclass``, ``@dataclass(frozen=True)``, ``@dataclass(frozen=True, slots=True)``."""

    def wrap(c):
        return _build(c, frozen, slots)

    return wrap if cls is None else wrap(cls)
