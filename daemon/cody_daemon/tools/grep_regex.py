"""The regular-expression subset `grepFiles` accepts, translated for ripgrep and for `re`.

Patterns are parsed once and rebuilt for each engine, so ripgrep (Rust `regex`) and the
pure-Python fallback agree on what a pattern means, line by line (a pattern never sees the
line's `\\n`, so `\\n` in a pattern is refused, as ripgrep refuses it).

Accepted by both engines: literals; `.`; `^` / `$` (start / end of the line, as are `\\A` /
`\\z`); `|`; groups `(...)`, `(?:...)`, `(?P<name>...)`; quantifiers `* + ? {n} {n,}
{n,m}`, each optionally lazy (`?`); classes `[...]` / `[^...]` with ranges, `\\d \\w \\s`
(and `\\D \\W \\S`) and POSIX `[:alpha:]`-style ASCII classes; `\\b \\B`; escapes `\\t \\r
\\f \\v \\a`, `\\xHH`, `\\x{H...}`, `\\uHHHH`, `\\u{H...}`, `\\UHHHHHHHH` and any escaped ASCII
punctuation or space; flags `i m s U u` as `(?flags)` or `(?flags:...)`, `-` to turn one
off (`m` is always on and cannot be turned off; `s` and `U` cannot change which lines match).

Refused with a clear error (PatternError) in both modes, because one engine lacks them or
reads them differently: look-around, backreferences and octal escapes, atomic groups,
conditionals, comments `(?#...)`, `(?<name>...)`, possessive or stacked quantifiers
(`a*+`, `a**`, `a{2}{3}`), `{,n}` and an unescaped `{` that is not a quantifier, a
quantifier with nothing to repeat (`^*`), `\\Z` (use `\\z`), `\\<` / `\\>` (use `\\b`),
verbose mode `(?x)`, flags other than `imsUu`, `\\n` and other unknown escapes.

Accepted by ripgrep but not by the fallback (`python` is None and `python_problem` says
why): Unicode property classes `\\p{...}` / `\\P{...}`, nested classes and class set
operations (`&&`, `--`, `~~`), negated POSIX classes `[:^alpha:]`, `(?-u)`, `(?i)` /
`(?-i)` anywhere but the start of the pattern (scoped `(?i:...)` works everywhere), and
nested repetition with an unbounded level, like `(a+)*` or `(\\w+\\.)+`, on which Python's
backtracking engine can take exponential time (bounded nesting like `(\\d{1,3}\\.){3}` is
fine).
Remaining differences are Unicode edge cases: the exact members of `\\w`, `\\s`, `\\b` and
case folding, and how bytes that are not valid UTF-8 match (the fallback reads them as
U+FFFD).
"""

from __future__ import annotations

import re
import string
from dataclasses import dataclass

__all__ = ["PatternError", "TranslatedPattern", "translate"]

MAX_REPEAT = 10_000
_REPEATS, _UNBOUNDED = 1, 2

_RUST_META = frozenset("\\.+*?()|[]{}^$#&-~")
_PUNCT = frozenset(string.punctuation + " ")
_CONTROL = {"t": 9, "r": 13, "f": 12, "v": 11, "a": 7}
_COUNTED = re.compile(r"\{(\d+)(,(\d*))?\}")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_POSIX = {
    "alnum": "0-9A-Za-z",
    "alpha": "A-Za-z",
    "ascii": "\\x00-\\x7f",
    "blank": "\\t ",
    "cntrl": "\\x00-\\x1f\\x7f",
    "digit": "0-9",
    "graph": "!-~",
    "lower": "a-z",
    "print": " -~",
    "punct": "!-/:-@\\[-`\\{-~",
    "space": "\\t\\n\\x0b\\x0c\\r ",
    "upper": "A-Z",
    "word": "0-9A-Za-z_",
    "xdigit": "0-9A-Fa-f",
}


class PatternError(ValueError):
    """A pattern outside the accepted subset (the message says what and why)."""


@dataclass(frozen=True)
class TranslatedPattern:
    rust: str
    """For ripgrep."""
    python: str | None
    """For `re.compile(python, re.MULTILINE)`, or None when the fallback cannot honour it."""
    python_problem: str | None = None
    single_line: bool = False
    """True when nothing in `python` can match `\\n`: then searching a whole file at once
    finds a match exactly when some line has one, at no extra backtracking cost."""


def translate(pattern: str) -> TranslatedPattern:
    """Check `pattern` against the accepted subset and rebuild it for both engines."""
    return _Parser(pattern).parse()


@dataclass
class _Atom:
    rust: str
    python: str | None
    char: int | None = None
    """The code point when the atom is a single literal character (a range endpoint)."""


class _Parser:
    def __init__(self, pattern: str) -> None:
        self.s = pattern
        self.i = 0
        self.rust: list[str] = []
        self.py: list[str] = []
        self.problem: str | None = None
        self.names: set[str] = set()
        self.groups: list[int] = []
        """Open groups: `_REPEATS` / `_UNBOUNDED` bits for the quantifiers inside each."""
        self.closed_group = 0
        """The bits of the group just closed (0 when the last atom is not a group)."""
        self.single_line = True
        """Nothing in the Python pattern can match a newline (see TranslatedPattern)."""
        self.repeatable = False
        self.at_start = True
        self.global_ignore_case = False

    def fail(self, message: str) -> PatternError:
        return PatternError(f"{message} (at position {self.i} of the pattern)")

    def python_cannot(self, what: str) -> None:
        if self.problem is None:
            self.problem = f"{what} needs ripgrep; the Python fallback cannot honour it"

    def emit(self, rust: str, python: str | None, *, repeatable: bool) -> None:
        self.rust.append(rust)
        if python is not None:
            self.py.append(python)
        self.repeatable = repeatable
        self.at_start = False
        self.closed_group = 0

    def parse(self) -> TranslatedPattern:
        s = self.s
        while self.i < len(s):
            c = s[self.i]
            if c == "\n":
                raise self.fail("a newline cannot match: lines are searched one at a time")
            if c == "\\":
                atom, repeatable = self.escape(in_class=False)
                self.emit(atom.rust, atom.python, repeatable=repeatable)
            elif c == "[":
                atom = self.char_class()
                self.emit(atom.rust, atom.python, repeatable=True)
            elif c == "(":
                self.group()
            elif c == ")":
                if not self.groups:
                    raise self.fail("unbalanced ')'")
                inner = self.groups.pop()
                self.i += 1
                self.emit(")", ")", repeatable=True)
                self.closed_group = inner
            elif c in "*+?{":
                self.quantifier()
            else:
                self.i += 1
                self.emit(c, c, repeatable=c not in "|^$")
        if self.groups:
            raise self.fail("unclosed '('")
        rust = "".join(self.rust)
        if self.problem is not None:
            return TranslatedPattern(rust, None, self.problem, single_line=False)
        python = ("(?i)" if self.global_ignore_case else "") + "".join(self.py)
        try:
            re.compile(python, re.MULTILINE)
        except (re.error, OverflowError, RecursionError) as exc:
            raise PatternError(f"invalid regular expression: {exc}") from None
        return TranslatedPattern(rust, python, single_line=self.single_line)

    def quantifier(self) -> None:
        s = self.s
        counted = _COUNTED.match(s, self.i) if s[self.i] == "{" else None
        if s[self.i] == "{" and counted is None:
            raise self.fail(r"a '{' must start a repetition like {2}, {2,} or {2,5}; write \{")
        if not self.repeatable:
            raise self.fail(f"the quantifier {s[self.i]!r} has nothing to repeat")
        if counted is not None:
            low, high = counted.group(1), counted.group(3)
            if high and int(high) < int(low):
                raise self.fail(f"invalid repetition {counted.group(0)}: the bounds are reversed")
            if max(int(low), int(high or 0)) > MAX_REPEAT:
                raise self.fail(f"repetition counts above {MAX_REPEAT} are not supported")
            text = counted.group(0)
        else:
            text = s[self.i]
        if counted is None:
            upper = "" if text in "*+" else "1"
        else:  # {n}: at most n; {n,}: unbounded; {n,m}: at most m
            upper = counted.group(3) if counted.group(2) else counted.group(1)
        bits = _UNBOUNDED | _REPEATS if upper == "" else (_REPEATS if int(upper) > 1 else 0)
        # Star height 2 with an unbounded part can backtrack exponentially in `re`.
        if (bits and self.closed_group & _UNBOUNDED) or (bits & _UNBOUNDED and self.closed_group):
            self.python_cannot("nested repetition like (a+)* or (a{2})+ (exponential in Python)")
        self.groups = [group | bits for group in self.groups]
        self.i += len(text)
        if s.startswith("?", self.i):
            text += "?"
            self.i += 1
        if self.i < len(s) and (s[self.i] in "*+?" or _COUNTED.match(s, self.i)):
            raise self.fail(
                "stacked quantifiers (a**, a*+, a{2}{3}) are not supported; use a group"
            )
        self.emit(text, text, repeatable=False)

    def group(self) -> None:
        s = self.s
        rest = s[self.i + 1 :]
        self.groups.append(0)
        if not rest.startswith("?"):
            self.i += 1
            self.emit("(", "(", repeatable=False)
            return
        if rest.startswith("?:"):
            self.i += 3
            self.emit("(?:", "(?:", repeatable=False)
            return
        if rest.startswith("?P<"):
            found = re.match(r"\?P<([^>]*)>", rest)
            if found is None or not _NAME.fullmatch(found.group(1)):
                raise self.fail("a group name must be letters, digits and _ (not first a digit)")
            if found.group(1) in self.names:
                raise self.fail(f"duplicate group name {found.group(1)!r}")
            self.names.add(found.group(1))
            self.i += 1 + found.end()
            self.emit(f"(?P<{found.group(1)}>", f"(?P<{found.group(1)}>", repeatable=False)
            return
        flags = re.match(r"\?([A-Za-z-]*)([:)])", rest)
        if flags is None:
            raise self.fail(self._unsupported_group(rest))
        self.flag_group(flags.group(1), scoped=flags.group(2) == ":")

    @staticmethod
    def _unsupported_group(rest: str) -> str:
        if rest.startswith(("?=", "?!", "?<=", "?<!")):
            return "look-around ((?=...), (?!...), (?<=...), (?<!...)) is not supported"
        if rest.startswith("?<"):
            return "named groups are written (?P<name>...)"
        if rest.startswith(("?P=", "?P>")):
            return "backreferences are not supported"
        return "unsupported group syntax (atomic, conditional and comment groups are not)"

    def flag_group(self, flags: str, *, scoped: bool) -> None:
        on, _, off = flags.partition("-")
        if not flags or "-" in off or (flags.endswith("-")):
            raise self.fail(f"invalid flags (?{flags})")
        for flag in on + off:
            if flag == "x":
                raise self.fail("verbose mode (?x) is not supported")
            if flag not in "imsUu":
                raise self.fail(f"unknown flag {flag!r}; the flags are i, m, s, U and u")
        if len(set(on + off)) != len(on + off):
            raise self.fail(f"a flag is repeated in (?{flags})")
        if "m" in off:
            raise self.fail("(?-m) is not supported: ^ and $ always match at line ends")
        if "u" in off:
            self.python_cannot("(?-u) (ASCII / byte mode)")
        self.i += len(flags) + 3
        case = "i" if "i" in on else ("-i" if "i" in off else "")
        rust = f"(?{flags}{':' if scoped else ')'}"
        if scoped:
            self.emit(rust, f"(?{case}:", repeatable=False)
            return
        self.groups.pop()
        if case and self.at_start:
            self.global_ignore_case = case == "i"
            self.rust.append(rust)  # still at the start as far as Python is concerned
            self.repeatable = False
            return
        if case:
            self.python_cannot(f"(?{case}) in the middle of a pattern (use (?{case}:...))")
        self.emit(rust, "", repeatable=False)

    def escape(self, *, in_class: bool) -> tuple[_Atom, bool]:
        """Parse `\\x` at `self.i`; returns the atom and whether it can be repeated."""
        s = self.s
        if self.i + 1 >= len(s):
            raise self.fail("the pattern ends with a lone backslash")
        d = s[self.i + 1]
        self.i += 2
        if d in "dDwWsS":
            self.single_line = self.single_line and d in "dwS"
            return _Atom(f"\\{d}", f"\\{d}"), True
        if d in "pP":
            braced = re.match(r"\{[^}]*\}", s[self.i :])
            if braced is None and (self.i >= len(s) or s[self.i] == "{"):
                raise self.fail(f"\\{d} needs a class name, as in \\{d}{{Greek}}")
            name = braced.group(0) if braced else s[self.i]
            self.i += len(name)
            self.python_cannot(f"the Unicode class \\{d}{name}")
            return _Atom(f"\\{d}{name}", None), True
        if d in "bBAz" and not in_class:
            python = {"A": "^", "z": "$"}.get(d, f"\\{d}")
            return _Atom(f"\\{d}", python), False
        if d in _CONTROL:
            return self.literal(_CONTROL[d]), True
        if d in "xuU":
            return self.literal(self.hex_escape(d)), True
        if d == "n":
            raise self.fail("\\n cannot match: lines are searched one at a time")
        if d == "Z":
            raise self.fail("\\Z is not supported; use \\z (end of line)")
        if d in "<>":
            raise self.fail(f"\\{d} is not supported; use \\b for a word boundary")
        if d.isdigit():
            raise self.fail("backreferences and octal escapes are not supported")
        if d in _PUNCT:
            return self.literal(ord(d)), True
        where = " inside a class" if in_class and d in "bBAz" else ""
        raise self.fail(f"unsupported escape \\{d}{where}")

    def hex_escape(self, kind: str) -> int:
        s = self.s
        braced = re.match(r"\{([0-9A-Fa-f]{1,8})\}", s[self.i :])
        width = {"x": 2, "u": 4, "U": 8}[kind]
        fixed = re.match(f"[0-9A-Fa-f]{{{width}}}", s[self.i :])
        found = braced or fixed
        if found is None:
            raise self.fail(f"\\{kind} needs {width} hex digits or {{hex}}")
        self.i += found.end()
        value = int(found.group(1) if braced else found.group(0), 16)
        if value > 0x10FFFF or 0xD800 <= value <= 0xDFFF:
            raise self.fail(f"\\{kind} escape {value:#x} is not a Unicode scalar value")
        return value

    def literal(self, code: int) -> _Atom:
        if code == 10:
            raise self.fail("a newline cannot match: lines are searched one at a time")
        ch = chr(code)
        if ch in _RUST_META:
            rust = "\\" + ch
        elif code < 32 or code == 127 or not ch.isprintable():
            rust = f"\\x{{{code:x}}}"
        else:
            rust = ch
        python = re.escape(ch) if ch in _PUNCT else f"\\U{code:08x}"
        if ch.isalnum() or ch == "_":
            python = ch
        return _Atom(rust, python, char=code)

    def char_class(self) -> _Atom:
        """Parse `[...]` at `self.i` (nested classes allowed, as ripgrep allows them)."""
        s = self.s
        start = self.i
        self.i += 1
        negated = s.startswith("^", self.i)
        self.i += negated
        self.single_line = self.single_line and not negated
        rust, py = ["[", "^" if negated else ""], ["[", "^" if negated else ""]
        first = True
        while True:
            if self.i >= len(s):
                self.i = start
                raise self.fail("unclosed character class '['")
            c = s[self.i]
            if c == "]" and not first:
                self.i += 1
                break
            first = False
            if s.startswith(("&&", "--", "~~"), self.i):
                self.python_cannot("class set operations (&&, --, ~~)")
                rust.append(s[self.i : self.i + 2])
                self.i += 2
                continue
            if c == "[":
                atom = self.posix_class() if s.startswith("[:", self.i) else self.nested_class()
                rust.append(atom.rust)
                py.append(atom.python or "")
                continue
            atom = self.class_atom()
            is_range = s.startswith("-", self.i) and s[self.i + 1 : self.i + 2] not in (
                "]",
                "-",
                "",
            )
            if atom.char is not None and is_range:
                self.i += 1
                high = self.class_atom()
                if high.char is None or high.char < atom.char:
                    raise self.fail("invalid range in a character class")
                if atom.char < 10 < high.char:
                    self.single_line = False
                rust.append(f"{atom.rust}-{high.rust}")
                py.append(f"{atom.python}-{high.python}")
                continue
            rust.append(atom.rust)
            py.append(atom.python or "")
        rust.append("]")
        py.append("]")
        return _Atom("".join(rust), "".join(py))

    def class_atom(self) -> _Atom:
        c = self.s[self.i]
        if c == "\\":
            return self.escape(in_class=True)[0]
        if c == "\n":
            raise self.fail("a newline cannot match: lines are searched one at a time")
        self.i += 1
        return self.literal(ord(c))

    def posix_class(self) -> _Atom:
        found = re.match(r"\[:(\^?)([a-z]+):\]", self.s[self.i :])
        if found is None or found.group(2) not in _POSIX:
            raise self.fail("unknown POSIX class; the names are " + ", ".join(_POSIX))
        self.i += found.end()
        if found.group(1):
            self.python_cannot(f"the negated class {found.group(0)}")
            return _Atom(found.group(0), None)
        if found.group(2) in ("ascii", "cntrl", "space"):
            self.single_line = False
        return _Atom(found.group(0), _POSIX[found.group(2)])

    def nested_class(self) -> _Atom:
        self.python_cannot("a nested character class")
        return self.char_class()
