"""``Knowledge.load(root)``: every YAML file of a root becomes records, a registry and a graph.

Layout of a root (any folder may be missing):

- ``formulas/**/*.yaml``: each file a list of formula records;
- ``knowledge/**/*.yaml``: each file a mapping whose keys name record kinds
  (``books``, ``chapters``, ``concepts``, ``paths``, ``actions``, ``goal_words``), each a list of records.

Loading collects every problem (YAML, duplicate key, schema, unit, expression, duplicate
id) instead of stopping at the first. Nothing is loaded at import time.
"""

from __future__ import annotations

from pathlib import Path

from engine.core.errors import AiinfraError, KnowledgeError, Problem
from engine.core.ids import DEFAULT_BOOK, Kind, parse_id, parse_user_id
from engine.core.record import dataclass, field
from engine.kb.loadcache import FileCache
from engine.kb.yamlio import MarkedDict, MarkedList, plain

TYPE_CHECKING = False  # typing costs about 4 ms to import; only type checkers need it

if TYPE_CHECKING:
    from engine.kb.formulas import FormulaSet
    from engine.kb.records import (
        Action,
        Book,
        Chapter,
        Concept,
        Formula,
        ReadingPath,
        Section,
        WordGroup,
    )

# name, root -> engine.api.CalculatorHandle; installed by engine.api.load (the top layer)
CALCULATOR_HANDLE = None

KNOWLEDGE_KINDS = ("books", "chapters", "concepts", "paths", "actions", "goal_words")

# folders of knowledge/ whose files each hold ONE record: folder -> (schema, Knowledge attribute)
SINGLE_RECORD_FOLDERS = {"models": ("model", "models"), "hardware": ("hardware", "hardware"), "operators": ("operators", "operators"),
                         "calculators": ("calculator", "calculators"),
                         "reference_architectures": ("reference_architecture", "reference_architectures"),
                         "systems": ("system", "systems"), "failure_taxonomies": ("failure_taxonomy", "failure_taxonomies"),
                         "scaling_laws": ("scaling_law", "scaling_laws"), "labs": ("lab", "labs")}
# folders read by their own loader, not by Knowledge.load (measurement tables: engine.domain.measurements)
OWN_LOADER_FOLDERS = ("measurements", "calibration")
# files of knowledge/ that each hold a LIST of records of one kind: file -> (schema, Knowledge attribute)
RECORD_LIST_FILES = {"carbon_intensity.yaml": ("carbon_intensity", "carbon_intensity")}
_SCHEMA = {"books": "book", "chapters": "chapter", "concepts": "concept", "paths": "path", "actions": "action", "goal_words": "word_group"}


def default_root() -> str:
    """The shipped knowledge (see ``engine.core.paths``)."""
    from engine.core.paths import shipped_root

    return shipped_root()


@dataclass
class Knowledge:
    root: Path
    formulas: FormulaSet  # () in a partial load that reads no formulas (load_books, an indexed load_single_folder)
    books: dict[str, Book] = field(default_factory=dict)
    chapters: dict[str, Chapter] = field(default_factory=dict)
    sections: dict[str, Section] = field(default_factory=dict)
    concepts: dict[str, Concept] = field(default_factory=dict)
    paths: dict[str, ReadingPath] = field(default_factory=dict)
    actions: dict[str, Action] = field(default_factory=dict)
    goal_words: dict[str, WordGroup] = field(default_factory=dict)  # words:<name> -> the words path for reads as one
    models: dict[str, dict] = field(default_factory=dict)  # id -> schema-checked record (plain dicts)
    hardware: dict[str, dict] = field(default_factory=dict)
    operators: dict[str, dict] = field(default_factory=dict)
    calculators: dict[str, dict] = field(default_factory=dict)  # calc:<name> -> record (engine.numeric.calculators)
    reference_architectures: dict[str, dict] = field(default_factory=dict)  # ra:<id> -> record (engine.domain.archs)
    systems: dict[str, dict] = field(default_factory=dict)  # sys:<id> -> record (engine.domain.systems)
    failure_taxonomies: dict[str, dict] = field(default_factory=dict)  # ft:<id> -> record (engine.domain.failures)
    scaling_laws: dict[str, dict] = field(default_factory=dict)  # sl:<id> -> record (engine.domain.scaling_data)
    labs: dict[str, dict] = field(default_factory=dict)  # lab:<n> -> record (engine.domain.labs)
    carbon_intensity: dict[str, dict] = field(default_factory=dict)  # grid:<id> -> record (knowledge/carbon_intensity.yaml)
    problems: list[Problem] = field(default_factory=list)
    places: dict[str, str] = field(default_factory=dict)  # id -> file:line

    def calculator(self, name: str):
        """``kb.calculator("kv-concurrency").run(context_tokens=8192, ...)``: see engine.api.CalculatorHandle.

        The handle belongs to the top layer: ``engine.api.load`` installs ``CALCULATOR_HANDLE``
        (kb never imports upward)."""
        if CALCULATOR_HANDLE is None:
            raise AiinfraError("kb.calculator(...) is the Python API's handle: load the knowledge with engine.api.load()")
        return CALCULATOR_HANDLE(name, self.root)

    @classmethod
    def load(cls, root: Path | str | None = None, strict: bool = True) -> Knowledge:
        """Load a root; with ``strict`` raise KnowledgeError listing every load problem."""
        root = Path(root if root is not None else default_root())
        loader = _Loader(root)
        knowledge = loader.run()
        if strict and knowledge.problems:
            raise KnowledgeError(knowledge.problems)
        return knowledge

    def graph(self):
        from engine.kb.graph import KnowledgeGraph

        return KnowledgeGraph.build(self)

    def record(self, ident: str):
        for table in (self.books, self.chapters, self.sections, self.concepts, self.paths, self.actions, self.goal_words):
            if ident in table:
                return table[ident]
        if ident in self.formulas:
            return self.formulas.get(ident)
        return None

    def title(self, ident: str) -> str:
        rec = self.record(ident)
        if rec is None:
            return ident
        return getattr(rec, "title", None) or getattr(rec, "name", ident)


def formula_files(root: Path) -> list[Path]:
    return sorted((root / "formulas").rglob("*.yaml")) if (root / "formulas").is_dir() else []


def knowledge_files(root: Path) -> list[Path]:
    """Files of kind -> records mappings (everything but the single-record folders)."""
    if not (root / "knowledge").is_dir():
        return []
    single = {root / "knowledge" / folder for folder in (*SINGLE_RECORD_FOLDERS, *OWN_LOADER_FOLDERS)}
    lists = {root / "knowledge" / name for name in RECORD_LIST_FILES}
    return sorted(p for p in (root / "knowledge").rglob("*.yaml") if p not in lists and not any(f in p.parents for f in single))


def record_list_files(root: Path) -> list[tuple[str, Path]]:
    return [(name, root / "knowledge" / name) for name in RECORD_LIST_FILES if (root / "knowledge" / name).is_file()]


def single_record_files(root: Path) -> list[tuple[str, Path]]:
    out = []
    for folder in SINGLE_RECORD_FOLDERS:
        base = root / "knowledge" / folder
        if base.is_dir():
            out += [(folder, p) for p in sorted(base.rglob("*.yaml"))]
    return out


class _Loader:  # the record classes are imported where a record is built: an indexed load needs none
    def __init__(self, root: Path):
        self.root = root
        self.problems: list[Problem] = []
        self.places: dict[str, str] = {}
        self.formulas: list[Formula] = []
        from engine.kb.formulas import FormulaSet

        self.k = Knowledge(root, FormulaSet([]))
        self.files = FileCache(root)  # each file read and schema-checked once per content (engine.kb.loadcache)

    def display(self, path: Path) -> str:
        try:
            return path.relative_to(self.root).as_posix()
        except ValueError:  # pragma: no cover
            return path.as_posix()

    def run(self) -> Knowledge:
        if not self.root.is_dir():
            self.problems.append(Problem(str(self.root), "", "", "is not a folder (expected a knowledge root with formulas/ and knowledge/)"))
        for path in formula_files(self.root):
            self.load_formula_file(path)
        for path in knowledge_files(self.root):
            self.load_knowledge_file(path)
        for folder, path in single_record_files(self.root):
            self.load_single_record(folder, path)
        for name, path in record_list_files(self.root):
            self.load_record_list(name, path)
        self.files.save()
        from engine.kb.formulas import FormulaSet

        self.k.formulas = FormulaSet(self.formulas)
        self.problems += self.k.formulas.problems()
        self.k.problems = sorted(self.problems)
        self.k.places = self.places
        return self.k

    def claim(self, ident: str, place: str) -> bool:
        """Register an id; a second definition is a problem naming both places."""
        if ident in self.places:
            self.problems.append(Problem(place, ident, "id", f"is defined twice (first at {self.places[ident]})"))
            return False
        self.places[ident] = place
        return True

    # ------------------------------------------------------------------ formulas
    def load_formula_file(self, path: Path) -> None:
        display = self.display(path)
        data, problems = self.files.load_yaml(path, display)
        self.problems += problems
        if problems:
            return
        if data is None:  # an empty file would drop its records without a word
            self.problems.append(Problem(f"{display}:1", "", "", _empty("expected a list of formula records")))
            return
        if not isinstance(data, list):
            self.problems.append(Problem(display, "", "", "expected a list of formula records"))
            return
        for i, raw in enumerate(data):
            line = data.mark_of(i)[0] if isinstance(data, MarkedList) else 0
            place = f"{display}:{line}"
            rid = str(raw.get("id", f"[{i}]")) if isinstance(raw, dict) else f"[{i}]"
            schema_problems = self.files.validate("formula", raw, display, rid)
            if schema_problems:
                self.problems += schema_problems
                continue
            if not self.claim(rid, place):
                continue
            from engine.kb.formulas import build_formula

            formula, problems = build_formula(raw, place)
            self.problems += problems
            if formula is not None:
                self.formulas.append(formula)

    # ------------------------------------------------------------------ knowledge
    def load_knowledge_file(self, path: Path) -> None:
        display = self.display(path)
        data, problems = self.files.load_yaml(path, display)
        self.problems += problems
        if problems:
            return
        if data is None:  # an empty file would drop its records without a word
            self.problems.append(Problem(f"{display}:1", "", "", _empty(f"expected a mapping with keys among {', '.join(KNOWLEDGE_KINDS)}")))
            return
        if not isinstance(data, dict):
            self.problems.append(Problem(display, "", "", f"expected a mapping with keys among {', '.join(KNOWLEDGE_KINDS)}"))
            return
        for kind, items in data.items():
            line = data.mark_of(kind)[0] if isinstance(data, MarkedDict) else 0
            if kind not in _SCHEMA:
                self.problems.append(Problem(f"{display}:{line}", "", str(kind), f"is not a record kind (expected one of {', '.join(KNOWLEDGE_KINDS)})"))
                continue
            if not isinstance(items, list):
                self.problems.append(Problem(f"{display}:{line}", "", str(kind), "expected a list of records"))
                continue
            for i, raw in enumerate(items):
                iline = items.mark_of(i)[0] if isinstance(items, MarkedList) else line
                rid = str(raw.get("id", f"{kind}[{i}]")) if isinstance(raw, dict) else f"{kind}[{i}]"
                schema_problems = self.files.validate(_SCHEMA[kind], raw, display, rid)
                if schema_problems:
                    self.problems += schema_problems
                    continue
                place = f"{display}:{iline}"
                getattr(self, f"build_{kind}")(raw, place)

    def load_single_record(self, folder: str, path: Path) -> None:
        schema, attribute = SINGLE_RECORD_FOLDERS[folder]
        display = self.display(path)
        data, problems = self.files.load_yaml(path, display)
        self.problems += problems
        if problems:
            return
        if data is None:  # an empty file would drop its records without a word
            self.problems.append(Problem(f"{display}:1", "", "", _empty(f"expected one {schema} record (a mapping)")))
            return
        if not isinstance(data, dict):
            self.problems.append(Problem(display, "", "", f"expected one {schema} record (a mapping)"))
            return
        rid = str(data.get("id", path.stem))
        schema_problems = self.files.validate(schema, data, display, rid)
        if schema_problems:
            self.problems += schema_problems
            return
        if self.claim(rid, f"{display}:{data.line}"):
            getattr(self.k, attribute)[rid] = plain(data)

    def load_record_list(self, name: str, path: Path) -> None:
        """A file holding a list of records of one kind (``knowledge/carbon_intensity.yaml``)."""
        schema, attribute = RECORD_LIST_FILES[name]
        display = self.display(path)
        data, problems = self.files.load_yaml(path, display)
        self.problems += problems
        if problems:
            return
        if data is None:  # an empty file would drop its records without a word
            self.problems.append(Problem(f"{display}:1", "", "", _empty(f"expected a list of {schema} records")))
            return
        if not isinstance(data, list):
            self.problems.append(Problem(display, "", "", f"expected a list of {schema} records"))
            return
        for i, raw in enumerate(data):
            rid = str(raw.get("id", f"[{i}]")) if isinstance(raw, dict) else f"[{i}]"
            schema_problems = self.files.validate(schema, raw, display, rid)
            if schema_problems:
                self.problems += schema_problems
                continue
            line = data.mark_of(i)[0] if isinstance(data, MarkedList) else 0
            if self.claim(rid, f"{display}:{line}"):
                getattr(self.k, attribute)[rid] = plain(raw)

    def build_books(self, raw: dict, place: str) -> None:
        from engine.kb.records import Book

        if self.claim(raw["id"], place):
            self.k.books[raw["id"]] = Book(
                raw["id"], raw["title"], raw["title_zh"], raw["source"], raw.get("author", ""),
                raw.get("version", ""), tuple(raw.get("parts", ())), raw.get("notes", ""), place,
                raw.get("pinned_version", ""), tuple(raw.get("decisions", ())),
            )

    def build_chapters(self, raw: dict, place: str) -> None:
        from engine.kb.records import Chapter, Section

        cid = raw["id"]
        chapter_id = parse_id(cid, Kind.CHAPTER)
        book = chapter_id.book
        sections = []
        raw_sections = raw.get("sections", ())
        for j, rs in enumerate(raw_sections):
            sid = self.qualify(rs["id"], Kind.SECTION, book, place, cid, f"sections[{j}].id")
            splace = f"{place.rsplit(':', 1)[0]}:{raw_sections.mark_of(j)[0]}" if isinstance(raw_sections, MarkedList) else place
            if sid is None:
                continue
            if str(parse_id(sid).chapter) != cid:
                self.problems.append(Problem(place, cid, f"sections[{j}].id", f"{sid} does not belong to {cid}"))
                continue
            sec = Section(
                sid, cid, rs["title"], rs.get("title_zh", ""),
                self.refs(rs.get("defines", ()), Kind.CONCEPT, book, splace, sid, "defines"),
                self.refs(rs.get("references", ()), Kind.CONCEPT, book, splace, sid, "references"),
                self.refs(rs.get("depends_on", ()), None, book, splace, sid, "depends_on"),
                rs.get("notes", ""), splace,
                self.refs(rs.get("extends", ()), Kind.CONCEPT, book, splace, sid, "extends"),
            )
            if self.claim(sid, splace):
                self.k.sections[sid] = sec
                sections.append(sec)
        if not self.claim(cid, place):
            return
        self.k.chapters[cid] = Chapter(
            cid, f"book:{book}", chapter_id.name, raw["title"], raw["title_zh"], tuple(sections),
            self.refs(raw.get("depends_on", ()), None, book, place, cid, "depends_on"),
            raw.get("depends_source", ""), raw.get("key_question", ""), raw.get("key_question_zh", ""),
            tuple(raw.get("deliverables", ())), raw.get("notes", ""), raw.get("source", ""), place,
            raw.get("part"), raw.get("track", ""), raw.get("skeleton"), raw.get("no_tree", ""),
        )

    def build_concepts(self, raw: dict, place: str) -> None:
        from engine.kb.records import Concept

        if self.claim(raw["id"], place):
            self.k.concepts[raw["id"]] = Concept(raw["id"], raw["name"], raw["name_zh"], raw.get("summary", ""), raw.get("source", ""), place)

    def build_paths(self, raw: dict, place: str) -> None:
        from engine.kb.records import ReadingPath, Step

        book = raw.get("book", f"book:{DEFAULT_BOOK}").split(":", 1)[1]
        steps = []
        for j, rs in enumerate(raw["steps"]):
            if isinstance(rs, str):
                rs = {"to": rs}
            if "placeholder" in rs:
                steps.append(Step("", rs.get("revisit", False), rs.get("note", ""), rs["placeholder"], rs.get("condition", "")))
                continue
            ident = self.qualify(rs["to"], None, book, place, raw["id"], f"steps[{j}]")
            if ident is not None:
                steps.append(Step(ident, rs.get("revisit", False), rs.get("note", ""), "", rs.get("condition", "")))
        if self.claim(raw["id"], place):
            self.k.paths[raw["id"]] = ReadingPath(
                raw["id"], raw["title"], raw["title_zh"], tuple(steps), raw.get("audience", ""), raw.get("source", ""),
                place, raw.get("kind", "goal"), f"book:{book}",
            )

    def build_actions(self, raw: dict, place: str) -> None:
        from engine.kb.records import Action

        targets = tuple(t for j, text in enumerate(raw["targets"])
                        if (t := self.qualify(text, None, DEFAULT_BOOK, place, raw["id"], f"targets[{j}]")) is not None)
        if self.claim(raw["id"], place):
            self.k.actions[raw["id"]] = Action(raw["id"], raw["word"], raw["word_zh"], targets, raw.get("note", ""), raw.get("source", ""), place)

    def build_goal_words(self, raw: dict, place: str) -> None:
        from engine.kb.records import WordGroup

        if self.claim(raw["id"], place):
            self.k.goal_words[raw["id"]] = WordGroup(raw["id"], raw["use"], tuple(raw["words"]), raw.get("why", ""), place)

    # ------------------------------------------------------------------ references
    def qualify(self, text: str, kind: Kind | None, book: str, place: str, rid: str, path: str) -> str | None:
        """A full id for ``text``: full ids pass, bare chapter/section numbers get ``book``."""
        try:
            if kind is None:
                try:
                    return str(parse_id(text))
                except ValueError:
                    return str(parse_user_id(text, Kind.SECTION if "." in text or text[:1].isupper() else Kind.CHAPTER, book))
            if kind in (Kind.CHAPTER, Kind.SECTION):
                return str(parse_user_id(text, kind, book))
            return str(parse_id(text, kind))
        except ValueError as exc:
            self.problems.append(Problem(place, rid, path, str(exc)))
            return None

    def refs(self, items, kind: Kind | None, book: str, place: str, rid: str, path: str) -> tuple[str, ...]:
        out = []
        for j, text in enumerate(items):
            ident = self.qualify(text, kind, book, place, rid, f"{path}[{j}]")
            if ident is not None:
                out.append(ident)
        return tuple(out)


def load_single_folder(root, folder: str, strict: bool = True) -> Knowledge:
    """A Knowledge holding only one single-record folder (``models``, ``hardware``, ...), read and
    schema-checked as ``Knowledge.load`` reads it; KnowledgeError when a file does not load.
    Commands that need one folder do not pay for the formulas and the books; a folder that
    loaded cleanly is answered from its cached index (``engine.kb.index``) until a file changes."""
    from engine.kb import index

    key, records = index.read(root, folder)
    if records is not None:
        k = Knowledge(Path(root), ())  # type: ignore[arg-type]  # no formulas: a partial load
        setattr(k, SINGLE_RECORD_FOLDERS[folder][1], records)
        return k
    loader = _Loader(Path(root))
    for name, path in single_record_files(Path(root)):
        if name == folder:
            loader.load_single_record(name, path)
    loader.files.save(whole=False)
    if loader.problems:
        if strict:
            raise KnowledgeError(loader.problems)
        loader.k.problems = sorted(loader.problems)  # the records that loaded, for a command about one of them
        return loader.k
    index.write(folder, key, getattr(loader.k, SINGLE_RECORD_FOLDERS[folder][1]))
    return loader.k


def load_record_list(root, name: str) -> Knowledge:
    """A Knowledge holding only one list file of RECORD_LIST_FILES (``carbon_intensity.yaml``), read and
    schema-checked as ``Knowledge.load`` reads it; KnowledgeError when it does not load."""
    loader = _Loader(Path(root))
    path = Path(root) / "knowledge" / name
    if path.is_file():
        loader.load_record_list(name, path)
    loader.files.save(whole=False)
    if loader.problems:
        raise KnowledgeError(sorted(loader.problems))
    return loader.k


def load_books(root) -> Knowledge:
    """A Knowledge holding the books, chapters, sections, concepts, reading paths and action words
    (``knowledge/`` less its single-record folders) and no formulas, read and checked as
    ``Knowledge.load`` reads them; KnowledgeError when a file does not load. The reading
    commands need nothing else; a root that loaded cleanly is answered from its cached index
    (``engine.kb.reading_index``) until a file changes."""
    from engine.kb import reading_index

    files = knowledge_files(Path(root))
    ident = reading_index.key(root, files)
    cached = reading_index.read(ident)
    if cached is not None:
        k = Knowledge(Path(root), ())  # type: ignore[arg-type]
        for table in reading_index.TABLES:
            setattr(k, table, cached[table])
        k.places = cached["places"]
        return k
    loader = _Loader(Path(root))
    for path in files:
        loader.load_knowledge_file(path)
    loader.files.save(whole=False)
    if loader.problems:
        raise KnowledgeError(sorted(loader.problems))
    loader.k.places = loader.places
    loader.k.formulas = ()  # type: ignore[assignment]
    reading_index.write(ident, loader.k)
    return loader.k


def _empty(expected: str) -> str:
    """``expected a list of formula records`` -> ``is empty (expected a list of formula records)``."""
    return f"is empty ({expected})"
