"""Emit one Python module per message spec.

For every struct of a message and every version, the emitter writes a decode
function and an encode function as straight-line code: runs of fixed-width
fields (and the length prefixes that follow them) become one precompiled
``struct.Struct`` call, variable-length fields are inlined, and nothing
interprets the spec at run time. Versions whose code would be identical share
one function.

Decoders assume nothing about their input: every length is checked against
the buffer before it is used, so a hostile length never allocates; any fault
(``struct.error``, ``IndexError``, ``UnicodeDecodeError`` or an explicit
``Bad``) is caught once at the top level and handed to the schema walker,
which names the field and offset.
"""

from __future__ import annotations

import base64
import struct
import uuid
from typing import Any

from kraft.messages.codegen.message_spec import (
    MAX_VERSION,
    FieldSpec,
    MessageSpec,
    StructSpec,
    Versions,
    snake_case,
)

FIXED = {
    "bool": ("?", 1),
    "int8": ("b", 1),
    "int16": ("h", 2),
    "uint16": ("H", 2),
    "int32": ("i", 4),
    "uint32": ("I", 4),
    "int64": ("q", 8),
    "float64": ("d", 8),
    "uuid": ("16s", 16),
}
PY_TYPES = {
    "bool": "bool",
    "int8": "int",
    "int16": "int",
    "uint16": "int",
    "int32": "int",
    "uint32": "int",
    "int64": "int",
    "float64": "float",
    "uuid": "_uuid.UUID",
    "string": "str",
    "bytes": "bytes",
    "records": "bytes | memoryview",
}


def module_name(spec_name: str) -> str:
    return snake_case(spec_name)


def _parse_int(text: str) -> int:
    t = text.strip()
    neg = t.startswith("-")
    body = t[1:] if neg else t
    value = int(body, 16) if body.lower().startswith("0x") else int(body, 10)
    return -value if neg else value


def scalar_default(f: FieldSpec) -> Any:
    """Kafka's default for a non-array, non-struct field, as a Python value."""
    t = f.type
    d = f.default
    if t == "bool":
        return d == "true"
    if t in ("int8", "int16", "uint16", "int32", "uint32", "int64"):
        return 0 if d in (None, "") else _parse_int(d)
    if t == "float64":
        return 0.0 if d in (None, "") else float(d)
    if t == "string":
        if d == "null":
            return None
        return "" if d is None else d
    if t == "uuid":
        if d in (None, ""):
            return uuid.UUID(int=0)
        return uuid.UUID(bytes=base64.urlsafe_b64decode(d + "=="))
    if t == "bytes":
        return None if d == "null" else b""
    if t == "records":
        return None
    raise ValueError(f"no scalar default for {t}")


def _literal(value: Any) -> str:
    if isinstance(value, uuid.UUID):
        return "_ZERO_UUID" if value.int == 0 else f"_uuid.UUID(int={value.int})"
    return repr(value)


def _writer(out: str) -> str:
    """Code that appends to the list named ``out`` (bound once as ``_w``)."""
    return "_w" if out == "out" else f"{out}.append"


class _Lines:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def __call__(self, indent: int, text: str) -> None:
        self.lines.append("    " * indent + text)

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


class ModuleEmitter:
    def __init__(self, spec: MessageSpec, source_name: str) -> None:
        self.spec = spec
        self.source_name = source_name
        self.formats: dict[str, str] = {}
        self.functions: list[str] = []
        self.bodies: dict[str, str] = {}  # body text -> function name
        self.dec: dict[tuple[str, int], str] = {}
        self.enc: dict[tuple[str, int], str] = {}
        self.default_structs: set[str] = set()
        self.uses_uuid = False
        self.counter = 0
        self.inline_depth = 0  # array elements are decoded inline, this many levels deep
        self.tb_declared = False

    # ----------------------------------------------------------- helpers
    def fmt(self, fmt: str) -> str:
        if fmt not in self.formats:
            self.formats[fmt] = f"_S{len(self.formats)}"
        return self.formats[fmt]

    def tmp(self, prefix: str) -> str:
        self.counter += 1
        return f"_{prefix}{self.counter}"

    def flexible(self, v: int) -> bool:
        return v in self.spec.flexible

    def field_flexible(self, f: FieldSpec, v: int) -> bool:
        return v in (f.flexible_override if f.flexible_override is not None else self.spec.flexible)

    def struct(self, name: str) -> StructSpec:
        return self.spec.structs[name]

    def struct_order(self) -> list[StructSpec]:
        """Structs in dependency order (a struct after everything it uses)."""
        order: list[str] = []
        seen: set[str] = set()

        def visit(s: StructSpec) -> None:
            for f in s.fields:
                if f.is_struct and f.element_type not in seen:
                    seen.add(f.element_type)
                    visit(self.struct(f.element_type))
                    order.append(f.element_type)

        visit(self.spec.root)
        for name in self.spec.structs:  # unreferenced common structs still get a class
            if name not in seen:
                seen.add(name)
                visit(self.struct(name))
                order.append(name)
        return [self.struct(n) for n in order]

    def default_expr(self, f: FieldSpec) -> str:
        """Code for a fresh default value of ``f``."""
        if f.is_array:
            return "None" if f.default == "null" else "[]"
        if f.is_struct:
            return "None" if f.default == "null" else f"{f.element_type}()"
        value = scalar_default(f)
        if isinstance(value, uuid.UUID):
            self.uses_uuid = True
        return _literal(value)

    def nondefault_expr(self, f: FieldSpec, src: str) -> str:
        if f.is_array:
            return f"{src} is not None" if f.default == "null" else f"({src} is None or len({src}) != 0)"
        if f.is_struct:
            if f.default == "null":
                return f"{src} is not None"
            self.default_structs.add(f.element_type)
            return f"{src} != _DEF_{f.element_type}"
        value = scalar_default(f)
        if value is None:
            return f"{src} is not None"
        if f.type in ("bytes", "records"):
            return f"({src} is None or len({src}) != 0)"
        return f"{src} != {_literal(value)}"

    def register(self, kind: str, sname: str, v: int, body: str) -> str:
        key = f"{kind}:{body}"
        name = self.bodies.get(key)
        if name is None:
            name = f"_{kind}_{sname}_v{v}"
            self.bodies[key] = name
            self.functions.append(body.replace("__FN__", name))
        return name

    # ----------------------------------------------------------- decode
    def decode_fn(self, s: StructSpec, v: int) -> str:
        key = (s.name, v)
        if key in self.dec:
            return self.dec[key]
        saved = self.counter, self.inline_depth
        self.counter = 0
        self.inline_depth = 0
        L = _Lines()
        L(0, "def __FN__(buf: Buffer, pos: int) -> tuple[Any, int]:")
        self.decode_struct_body(L, 1, s, v, "o")
        L(1, "return o, pos")
        name = self.register("d", s.name, v, L.text())
        self.dec[key] = name
        self.counter, self.inline_depth = saved
        return name

    def is_leaf(self, s: StructSpec) -> bool:
        """A struct with no struct-typed fields: small enough to inline into
        the loop of the array that holds it (saves a call per element)."""
        return not any(f.is_struct for f in s.fields)

    def decode_struct_body(self, L: _Lines, ind: int, s: StructSpec, v: int, o: str) -> None:
        """Decode struct ``s`` into a new object bound to ``o``, advancing ``pos``."""
        L(ind, f"{o} = _new({s.name})")
        present = [f for f in s.fields if v in f.versions]
        tagged = sorted((f for f in present if v in f.tagged), key=lambda f: f.tag or 0)
        regular = [f for f in present if v not in f.tagged]
        for f in s.fields:
            if v not in f.versions or v in f.tagged:
                L(ind, f"{o}.{f.attr} = {self.default_expr(f)}")
        pending: list[tuple[str, str]] = []
        post: list[str] = []

        def flush() -> None:
            if not pending:
                return
            fmt = ">" + "".join(p[1] for p in pending)
            targets = ", ".join(p[0] for p in pending)
            if len(pending) == 1:
                targets += ","
            L(ind, f"{targets} = {self.fmt(fmt)}.unpack_from(buf, pos)")
            L(ind, f"pos += {struct.calcsize(fmt)}")
            for line in post:
                L(ind, line)
            pending.clear()
            post.clear()

        for f in regular:
            target = f"{o}.{f.attr}"
            if not f.is_array and f.type in FIXED:
                if f.type == "uuid":
                    u = self.tmp("u")
                    pending.append((u, "16s"))
                    post.append(f"{target} = _UUIDS.get({u}) or _uuid_of({u})")
                else:
                    pending.append((target, FIXED[f.type][0]))
                continue
            prefix = self.length_prefix(f, v)
            if prefix is not None:
                n = self.tmp("n")
                pending.append((n, prefix))
                flush()
                self.decode_body(L, ind, f, v, target, n)
            else:
                flush()
                self.decode_field(L, ind, f, v, target)
        flush()
        if self.flexible(v):
            tag_fn = self.decode_tags_fn(s, v, tagged) if tagged else "_rt.read_unknown_tagged_fields"
            L(ind, "if buf[pos] == 0:")
            L(ind + 1, "pos += 1")
            L(ind + 1, f"{o}.unknown_tagged_fields = ()")
            L(ind, "else:")
            L(ind + 1, f"pos = {tag_fn}({o}, buf, pos)")
        else:
            L(ind, f"{o}.unknown_tagged_fields = ()")

    def length_prefix(self, f: FieldSpec, v: int) -> str | None:
        """The fixed-width prefix read before a variable-length field, if any
        (it can join the preceding fused ``struct`` group)."""
        if f.is_array or f.type in ("string", "bytes", "records"):
            if self.field_flexible(f, v):
                return None
            return "h" if (not f.is_array and f.type == "string") else "i"
        if f.is_struct and v in f.nullable:
            return "b"
        return None

    def read_compact_length(self, L: _Lines, ind: int, n: str) -> None:
        L(ind, f"{n} = buf[pos]")
        L(ind, f"if {n} < 128:")
        L(ind + 1, "pos += 1")
        L(ind, "else:")
        L(ind + 1, f"{n}, pos = _uv(buf, pos)")
        L(ind, f"{n} -= 1")

    def decode_field(self, L: _Lines, ind: int, f: FieldSpec, v: int, target: str) -> None:
        """Decode one field, prefix included (no fusion)."""
        if not f.is_array and f.type in FIXED:
            fmt, size = FIXED[f.type]
            if f.type == "uuid":
                L(ind, "if len(buf) - pos < 16:")
                L(ind + 1, "raise _Bad('uuid past end of buffer')")
                L(ind, f"{target} = _uuid_of(bytes(buf[pos:pos + 16]))")
            else:
                L(ind, f"{target}, = {self.fmt('>' + fmt)}.unpack_from(buf, pos)")
            L(ind, f"pos += {size}")
            return
        prefix = self.length_prefix(f, v)
        n = self.tmp("n")
        if prefix is not None:
            L(ind, f"{n}, = {self.fmt('>' + prefix)}.unpack_from(buf, pos)")
            L(ind, f"pos += {struct.calcsize('>' + prefix)}")
        elif f.is_array or f.type in ("string", "bytes", "records"):
            self.read_compact_length(L, ind, n)
        else:
            n = ""
        self.decode_body(L, ind, f, v, target, n)

    def decode_body(self, L: _Lines, ind: int, f: FieldSpec, v: int, target: str, n: str) -> None:
        """Decode what follows the length/count/marker held in variable ``n``."""
        nullable = v in f.nullable
        if f.is_struct and not f.is_array:
            fn = self.decode_fn(self.struct(f.element_type), v)
            if n:
                L(ind, f"if {n} < 0:")
                L(ind + 1, f"{target} = None")
                L(ind, "else:")
                L(ind + 1, f"{target}, pos = {fn}(buf, pos)")
            else:
                L(ind, f"{target}, pos = {fn}(buf, pos)")
            return
        L(ind, f"if {n} < 0:")
        if nullable:
            L(ind + 1, f"{target} = None")
            L(ind, "else:")
            ind += 1
        else:
            L(ind + 1, f"raise _Bad('null (length {{}}) in a non-nullable field'.format({n}))")
        if f.is_array:
            self.decode_array(L, ind, f, v, target, n)
            return
        e = self.tmp("e")
        L(ind, f"{e} = pos + {n}")
        L(ind, f"if {e} > len(buf):")
        L(ind + 1, f"raise _Bad('length {{}} past end of buffer'.format({n}))")
        if f.type == "string":
            L(ind, f"{target} = str(buf[pos:{e}], 'utf-8')")
        elif f.type == "bytes":
            L(ind, f"{target} = bytes(buf[pos:{e}])")
        else:  # records: zero-copy
            L(ind, f"{target} = memoryview(buf)[pos:{e}]")
        L(ind, f"pos = {e}")

    def decode_array(self, L: _Lines, ind: int, f: FieldSpec, v: int, target: str, n: str) -> None:
        et = f.element_type
        if et in FIXED:
            fmt, size = FIXED[et]
            sz = self.tmp("s")
            L(ind, f"{sz} = {n} * {size}")
            L(ind, f"if {sz} > len(buf) - pos:")
            L(ind + 1, f"raise _Bad('array of {{}} elements past end of buffer'.format({n}))")
            if et == "uuid":
                L(ind, f"{target} = [_uuid_of(bytes(buf[p:p + 16])) for p in range(pos, pos + {sz}, 16)]")
            else:
                L(ind, f"{target} = list(_unpack_from('>%d{fmt}' % {n}, buf, pos))")
            L(ind, f"pos += {sz}")
            return
        L(ind, f"if {n} > len(buf) - pos:")
        L(ind + 1, f"raise _Bad('array of {{}} elements past end of buffer'.format({n}))")
        lst = self.tmp("l")
        L(ind, f"{lst} = []")
        if et in self.spec.structs:
            x = self.tmp("x")
            L(ind, "for _ in range({}):".format(n))
            es = self.struct(et)
            if self.inline_depth < 3:
                self.inline_depth += 1
                self.decode_struct_body(L, ind + 1, es, v, x)
                self.inline_depth -= 1
            else:
                L(ind + 1, f"{x}, pos = {self.decode_fn(es, v)}(buf, pos)")
            L(ind + 1, f"{lst}.append({x})")
        else:  # string / bytes elements
            flex = self.field_flexible(f, v)
            m = self.tmp("m")
            e = self.tmp("e")
            L(ind, "for _ in range({}):".format(n))
            if flex:
                self.read_compact_length(L, ind + 1, m)
            else:
                pfx = "h" if et == "string" else "i"
                L(ind + 1, f"{m}, = {self.fmt('>' + pfx)}.unpack_from(buf, pos)")
                L(ind + 1, f"pos += {struct.calcsize('>' + pfx)}")
            L(ind + 1, f"{e} = pos + {m}")
            L(ind + 1, f"if {m} < 0 or {e} > len(buf):")
            L(ind + 2, f"raise _Bad('bad element length {{}}'.format({m}))")
            conv = f"str(buf[pos:{e}], 'utf-8')" if et == "string" else f"bytes(buf[pos:{e}])"
            L(ind + 1, f"{lst}.append({conv})")
            L(ind + 1, f"pos = {e}")
        L(ind, f"{target} = {lst}")

    def decode_tags_fn(self, s: StructSpec, v: int, tagged: list[FieldSpec]) -> str:
        saved = self.counter
        self.counter = 0
        L = _Lines()
        L(0, "def __FN__(o: Any, buf: Buffer, pos: int) -> int:")
        L(1, "count, pos = _uv(buf, pos)")
        L(1, "if count > len(buf) - pos:")
        L(2, "raise _Bad('tagged field count {} past end of buffer'.format(count))")
        L(1, "unknown = None")
        L(1, "for _ in range(count):")
        L(2, "tag, pos = _uv(buf, pos)")
        L(2, "size, pos = _uv(buf, pos)")
        L(2, "end = pos + size")
        L(2, "if end > len(buf):")
        L(3, "raise _Bad('tagged field {} of {} bytes past end of buffer'.format(tag, size))")
        kw = "if"
        for f in tagged:
            L(2, f"{kw} tag == {f.tag}:")
            self.decode_field(L, 3, f, v, f"o.{f.attr}")
            L(3, "if pos != end:")
            L(4, f"raise _Bad('tagged field {f.tag} ({f.name}) is {{}} bytes, its value {{}}'.format(size, pos - end + size))")
            kw = "elif"
        if tagged:
            L(2, "else:")
            ind = 3
        else:
            ind = 2
        L(ind, "if unknown is None:")
        L(ind + 1, "unknown = []")
        L(ind, "unknown.append((tag, bytes(buf[pos:end])))")
        L(ind, "pos = end")
        L(1, "if unknown is None:")
        L(2, "o.unknown_tagged_fields = ()")
        L(1, "else:")
        L(2, "# Kafka reads tags in any order but writes them ascending: keep them")
        L(2, "# in that order so a re-encoded message decodes to an equal one.")
        L(2, "unknown.sort(key=_rt.tag_of)")
        L(2, "o.unknown_tagged_fields = unknown")
        L(1, "return pos")
        self.counter = saved
        return self.register("dt", s.name, v, L.text())

    # ----------------------------------------------------------- encode
    def encode_fn(self, s: StructSpec, v: int) -> str:
        key = (s.name, v)
        if key in self.enc:
            return self.enc[key]
        saved = self.counter, self.inline_depth, self.tb_declared
        self.counter = 0
        self.inline_depth = 0
        L = _Lines()
        self.tb_declared = False  # the tagged-field buffer is annotated once per function
        L(0, "def __FN__(o: Any, out: list[bytes]) -> None:")
        L(1, "_w = out.append")
        self.encode_struct_body(L, 1, s, v, "o")
        name = self.register("e", s.name, v, L.text())
        self.enc[key] = name
        self.counter, self.inline_depth, self.tb_declared = saved
        return name

    def encode_struct_body(self, L: _Lines, ind: int, s: StructSpec, v: int, o: str) -> None:
        """Append the encoding of the struct bound to ``o`` (writer ``_w``)."""
        present = [f for f in s.fields if v in f.versions]
        tagged = sorted((f for f in present if v in f.tagged), key=lambda f: f.tag or 0)
        regular = [f for f in present if v not in f.tagged]
        for f in s.fields:
            if v not in f.versions and not f.ignorable:
                L(ind, f"if {self.nondefault_expr(f, o + '.' + f.attr)}:")
                L(ind + 1, f"raise _rt.non_default({s.name!r}, {f.attr!r}, {v})")
        pending: list[tuple[str, str]] = []

        def flush() -> None:
            if not pending:
                return
            fmt = ">" + "".join(p[1] for p in pending)
            L(ind, f"_w({self.fmt(fmt)}.pack({', '.join(p[0] for p in pending)}))")
            pending.clear()

        for f in regular:
            src = f"{o}.{f.attr}"
            if not f.is_array and f.type in FIXED:
                pending.append((src + ".bytes" if f.type == "uuid" else src, FIXED[f.type][0]))
                continue
            flush()
            self.encode_field(L, ind, f, v, src, "out")
        flush()
        if self.flexible(v):
            self.encode_tags(L, ind, tagged, v, o)

    def write_compact_length(self, L: _Lines, ind: int, expr: str, out: str) -> None:
        n = self.tmp("n")
        L(ind, f"{n} = {expr}")
        L(ind, f"if {n} < 128:")
        L(ind + 1, f"{_writer(out)}(_UV1[{n}])")
        L(ind, "else:")
        L(ind + 1, f"{_writer(out)}(_uvw({n}))")

    def encode_field(self, L: _Lines, ind: int, f: FieldSpec, v: int, src: str, out: str) -> None:
        flex = self.field_flexible(f, v)
        nullable = v in f.nullable
        if not f.is_array and f.type in FIXED:
            fmt = FIXED[f.type][0]
            val = src + ".bytes" if f.type == "uuid" else src
            L(ind, f"{_writer(out)}({self.fmt('>' + fmt)}.pack({val}))")
            return
        if f.is_struct and not f.is_array:
            fn = self.encode_fn(self.struct(f.element_type), v)
            if nullable:
                L(ind, f"if {src} is None:")
                L(ind + 1, f"{_writer(out)}(b'\\xff')")
                L(ind, "else:")
                L(ind + 1, f"{_writer(out)}(b'\\x01')")
                L(ind + 1, f"{fn}({src}, {out})")
            else:
                L(ind, f"{fn}({src}, {out})")
            return
        val = self.tmp("v")
        L(ind, f"{val} = {src}")
        if nullable:
            L(ind, f"if {val} is None:")
            if flex:
                L(ind + 1, f"{_writer(out)}(b'\\x00')")
            else:
                null = "b'\\xff\\xff'" if (f.type == "string" and not f.is_array) else "b'\\xff\\xff\\xff\\xff'"
                L(ind + 1, f"{_writer(out)}({null})")
            L(ind, "else:")
            ind += 1
        if f.is_array:
            if flex:
                self.write_compact_length(L, ind, f"len({val}) + 1", out)
            else:
                L(ind, f"{_writer(out)}({self.fmt('>i')}.pack(len({val})))")
            self.encode_array_elements(L, ind, f, v, val, out, flex)
            return
        if f.type == "string":
            b = self.tmp("b")
            L(ind, f"{b} = {val}.encode('utf-8')")
        else:
            b = val
        if flex:
            self.write_compact_length(L, ind, f"len({b}) + 1", out)
        else:
            pfx = ">h" if f.type == "string" else ">i"
            L(ind, f"{_writer(out)}({self.fmt(pfx)}.pack(len({b})))")
        L(ind, f"{_writer(out)}({b})")

    def encode_array_elements(self, L: _Lines, ind: int, f: FieldSpec, v: int, val: str,
                              out: str, flex: bool) -> None:
        et = f.element_type
        x = self.tmp("x")
        if et in FIXED:
            if et == "uuid":
                L(ind, f"for {x} in {val}:")
                L(ind + 1, f"{_writer(out)}({x}.bytes)")
            else:
                L(ind, f"{_writer(out)}(_pack('>%d{FIXED[et][0]}' % len({val}), *{val}))")
            return
        if et in self.spec.structs:
            L(ind, f"for {x} in {val}:")
            if out == "out" and self.inline_depth < 3:
                self.inline_depth += 1
                self.encode_struct_body(L, ind + 1, self.struct(et), v, x)
                self.inline_depth -= 1
            else:
                L(ind + 1, f"{self.encode_fn(self.struct(et), v)}({x}, {out})")
            return
        L(ind, f"for {x} in {val}:")
        b = self.tmp("b")
        L(ind + 1, f"{b} = {x}.encode('utf-8')" if et == "string" else f"{b} = {x}")
        if flex:
            self.write_compact_length(L, ind + 1, f"len({b}) + 1", out)
        else:
            pfx = ">h" if et == "string" else ">i"
            L(ind + 1, f"{_writer(out)}({self.fmt(pfx)}.pack(len({b})))")
        L(ind + 1, f"{_writer(out)}({b})")

    def encode_tags(self, L: _Lines, ind: int, tagged: list[FieldSpec], v: int, o: str) -> None:
        if not tagged:
            L(ind, f"if {o}.unknown_tagged_fields:")
            L(ind + 1, f"_rt.write_tagged_fields(out, [], {o}.unknown_tagged_fields)")
            L(ind, "else:")
            L(ind + 1, "_w(b'\\x00')")
            return
        L(ind, "tags = []")
        for f in tagged:
            src = f"{o}.{f.attr}"
            L(ind, f"if {self.nondefault_expr(f, src)}:")
            L(ind + 1, "tb = []" if self.tb_declared else "tb: list[bytes] = []")
            self.tb_declared = True
            self.encode_field(L, ind + 1, f, v, src, "tb")
            L(ind + 1, f"tags.append(({f.tag}, b''.join(tb)))")
        L(ind, f"if tags or {o}.unknown_tagged_fields:")
        L(ind + 1, f"_rt.write_tagged_fields(out, tags, {o}.unknown_tagged_fields)")
        L(ind, "else:")
        L(ind + 1, "_w(b'\\x00')")

    # ----------------------------------------------------------- classes
    def py_type(self, f: FieldSpec) -> str:
        base = f.element_type if f.is_struct else PY_TYPES[f.element_type]
        t = f"list[{base}]" if f.is_array else base
        if not f.nullable.empty or f.default == "null" or f.type == "records":
            t += " | None"
        return t

    def emit_class(self, L: _Lines, s: StructSpec, root: bool) -> None:
        spec = self.spec
        L(0, f"class {s.name}:")
        if root:
            doc = f"{spec.name}: {spec.type}"
            if spec.api_key is not None:
                doc += f", api key {spec.api_key}"
            doc += f", versions {spec.valid}, flexible {spec.flexible}."
        else:
            doc = f"The {s.name} struct of {spec.name}."
        L(1, f'"""{doc}"""')
        L(0, "")
        slots = [f.attr for f in s.fields] + ["unknown_tagged_fields"]
        L(1, f"__slots__ = ({', '.join(repr(x) for x in slots)},)")
        if root:
            L(1, f"API_KEY: ClassVar[int | None] = {spec.api_key!r}")
            L(1, f"MESSAGE_TYPE: ClassVar[str] = {spec.type!r}")
            L(1, f"LOWEST_VERSION: ClassVar[int] = {spec.valid.lo}")
            L(1, f"HIGHEST_VERSION: ClassVar[int] = {spec.valid.hi}")
            flex_from = None if spec.flexible.empty else spec.flexible.lo
            L(1, f"FLEXIBLE_FROM: ClassVar[int | None] = {flex_from!r}")
            L(1, "SCHEMA: ClassVar[_MessageInfo]")
        L(0, "")
        params = []
        body = []
        for f in s.fields:
            t = self.py_type(f)
            if f.is_array or (f.is_struct and f.default != "null"):
                params.append(f"{f.attr}: {t} = _DEFAULT")
                body.append(f"self.{f.attr} = {self.default_expr(f)} if {f.attr} is _DEFAULT else {f.attr}")
            else:
                params.append(f"{f.attr}: {t} = {self.default_expr(f)}")
                body.append(f"self.{f.attr} = {f.attr}")
        params.append("unknown_tagged_fields: Sequence[tuple[int, bytes]] = ()")
        body.append("self.unknown_tagged_fields = unknown_tagged_fields")
        L(1, "def __init__(")
        L(2, "self,")
        L(2, "*,")
        for p in params:
            L(2, p + ",")
        L(1, ") -> None:")
        for b in body:
            L(2, b)
        L(0, "")
        L(1, "__eq__ = _rt.struct_eq")
        L(1, "__repr__ = _rt.struct_repr")
        L(1, "__hash__ = None  # type: ignore[assignment]")
        if root:
            lo, hi = spec.valid.lo, spec.valid.hi
            L(0, "")
            L(1, "def encode(self, version: int) -> bytes:")
            L(2, '"""The message body in ``version`` (no size prefix, no header)."""')
            L(2, "return b''.join(self.encode_parts(version))")
            L(0, "")
            L(1, "def encode_parts(self, version: int) -> list[bytes]:")
            L(2, '"""The encoding as a list of byte strings to be sent in order;')
            L(2, 'records fields are passed through uncopied."""')
            L(2, f"if not {lo} <= version <= {hi}:")
            L(3, f"raise _rt.unsupported_version({spec.name!r}, version, {lo}, {hi})")
            L(2, "out: list[bytes] = []")
            L(2, "try:")
            L(3, "_ENCODERS[version](self, out)")
            L(2, "except Exception as exc:")
            L(3, "raise _rt.encode_failure(SCHEMA, self, version, exc) from None")
            L(2, "return out")
            L(0, "")
            L(1, "@classmethod")
            L(1, f"def decode(cls, buf: Buffer, version: int) -> {s.name}:")
            L(2, '"""Decode a whole buffer; trailing bytes are an error."""')
            L(2, f"if not {lo} <= version <= {hi}:")
            L(3, f"raise _rt.unsupported_version({spec.name!r}, version, {lo}, {hi})")
            L(2, "try:")
            L(3, "obj, pos = _DECODERS[version](buf, 0)")
            L(2, "except Exception as exc:")
            L(3, "raise _rt.decode_failure(SCHEMA, buf, 0, version, exc) from None")
            L(2, "if pos != len(buf):")
            L(3, "raise _rt.trailing_bytes(SCHEMA, version, pos, len(buf))")
            L(2, "return obj")
            L(0, "")
            L(1, "@classmethod")
            L(1, f"def read(cls, buf: Buffer, pos: int, version: int) -> tuple[{s.name}, int]:")
            L(2, '"""Decode at ``pos``; returns the message and the position after it."""')
            L(2, f"if not {lo} <= version <= {hi}:")
            L(3, f"raise _rt.unsupported_version({spec.name!r}, version, {lo}, {hi})")
            L(2, "try:")
            L(3, "return _DECODERS[version](buf, pos)")
            L(2, "except Exception as exc:")
            L(3, "raise _rt.decode_failure(SCHEMA, buf, pos, version, exc) from None")
        L(0, "")
        L(0, "")

    # ----------------------------------------------------------- schema
    def range_lit(self, r: Versions) -> str:
        return "(1, 0)" if r.empty else f"({r.lo}, {r.hi})"

    def field_info(self, f: FieldSpec) -> str:
        if f.is_array:
            default: Any = "null" if f.default == "null" else "[]"
        elif f.is_struct:
            default = "null" if f.default == "null" else "{}"
        else:
            default = scalar_default(f)
        flex = "None" if f.flexible_override is None else self.range_lit(f.flexible_override)
        return (
            f"_FieldInfo({f.name!r}, {f.attr!r}, {f.json_name!r}, {f.element_type!r}, {f.is_array!r}, "
            f"{self.range_lit(f.versions)}, {self.range_lit(f.nullable)}, {self.range_lit(f.tagged)}, "
            f"{f.tag!r}, {f.ignorable!r}, {flex}, {_literal(default)}, "
            f"{(f.element_type if f.is_struct else None)!r}, {f.about!r})"
        )

    # ----------------------------------------------------------- module
    def emit(self) -> str:
        spec = self.spec
        structs = self.struct_order()
        versions = range(spec.valid.lo, spec.valid.hi + 1)
        dec_names = [self.decode_fn(spec.root, v) for v in versions]
        enc_names = [self.encode_fn(spec.root, v) for v in versions]
        # Nested structs of versions where they cannot occur are never
        # called; only reachable (struct, version) pairs were generated.
        classes = _Lines()
        for s in structs:
            self.emit_class(classes, s, root=False)
        self.emit_class(classes, spec.root, root=True)

        out = _Lines()
        out(0, f"# Generated by kraft.messages.codegen from {self.source_name}. Do not edit:")
        out(0, "# change the spec and run `python -m kraft.messages.codegen`.")
        out(0, f'"""{spec.name} ({spec.type}'
            + (f", api key {spec.api_key}" if spec.api_key is not None else "")
            + f"), versions {spec.valid}, flexible versions {spec.flexible}."
            + '"""')
        out(0, "")
        out(0, "from __future__ import annotations")
        out(0, "")
        out(0, "import struct as _struct")
        out(0, "import uuid as _uuid")
        out(0, "from typing import Any, ClassVar, Sequence")
        out(0, "")
        out(0, "from kraft.messages import runtime as _rt")
        out(0, "from kraft.messages.schema import FieldInfo as _FieldInfo")
        out(0, "from kraft.messages.schema import MessageInfo as _MessageInfo")
        out(0, "from kraft.messages.schema import StructInfo as _StructInfo")
        out(0, "")
        out(0, "Buffer = bytes | bytearray | memoryview")
        out(0, "_new = object.__new__")
        out(0, "_unpack_from = _struct.unpack_from")
        out(0, "_pack = _struct.pack")
        out(0, "_uv = _rt.read_uvarint")
        out(0, "_uvw = _rt.uvarint")
        out(0, "_UV1 = _rt.UVARINT_1")
        out(0, "_uuid_of = _rt.uuid_from_bytes")
        out(0, "_Bad = _rt.Bad")
        out(0, "_DEFAULT = _rt.DEFAULT")
        out(0, "_ZERO_UUID = _rt.ZERO_UUID")
        out(0, "_UUIDS = _rt.UUID_CACHE")
        for fmt, name in self.formats.items():
            out(0, f"{name} = _struct.Struct({fmt!r})")
        out(0, "")
        out(0, "")
        text = out.text() + classes.text()
        text += "\n\n".join(self.functions) + "\n\n"
        tail = _Lines()
        for sname in sorted(self.default_structs):
            tail(0, f"_DEF_{sname} = {sname}()")
        pad = ["None"] * spec.valid.lo
        tail(0, f"_DECODERS: tuple[Any, ...] = ({', '.join(pad + dec_names)},)")
        tail(0, f"_ENCODERS: tuple[Any, ...] = ({', '.join(pad + enc_names)},)")
        tail(0, "")

        def struct_info(s: StructSpec) -> str:
            fields = ",\n        ".join(self.field_info(f) for f in s.fields)
            trailing = "," if len(s.fields) == 1 else ""
            return f"_StructInfo({s.name!r}, (\n        {fields}{trailing}\n    ), {s.name})" if s.fields \
                else f"_StructInfo({s.name!r}, (), {s.name})"

        tail(0, "SCHEMA = _MessageInfo(")
        tail(1, f"{spec.name!r}, {spec.type!r}, {spec.api_key!r}, "
                f"{self.range_lit(spec.valid)}, {self.range_lit(spec.flexible)},")
        tail(1, struct_info(spec.root) + ",")
        tail(1, "{")
        for s in structs:
            tail(2, f"{s.name!r}: " + struct_info(s).replace("\n", "\n    ") + ",")
        tail(1, "},")
        tail(0, ")")
        tail(0, f"{spec.name}.SCHEMA = SCHEMA")
        return text + tail.text()


def emit_module(spec: MessageSpec, source_name: str) -> str:
    return ModuleEmitter(spec, source_name).emit()


__all__ = ["emit_module", "module_name", "scalar_default", "MAX_VERSION"]
